import EarshotSync
import EarshotWire
import FoundationEssentials
import SwiftProtobuf

/// Calls an Earshot server over a DEALER socket, by the EARSHOT/1 call rules.
///
/// Any number of tasks may call at once; calls are pipelined on the one connection and matched
/// to their answers by request id (from 1). Every call has a deadline enforced here too, so a
/// server that is down yields DEADLINE_EXCEEDED, never a hang. Nothing is retried.
public final class RpcClient: Sendable {
    public struct Configuration: Sendable {
        /// The timeout of `call` and `ping` when none is given.
        public var defaultTimeout: Duration = .seconds(10)
        /// The timeout of `stream` when none is given: streams may run for hours.
        public var defaultStreamTimeout: Duration = .seconds(24 * 3600)
        /// Requests bigger than this fail at once with RESOURCE_EXHAUSTED instead of making the
        /// server drop the connection (keep it at the server's `maximumMessageBytes`).
        public var maximumRequestBytes = 4 << 20
        /// Larger inbound messages make libzmq drop the connection.
        public var maximumMessageBytes = 16 << 20
        /// While a stream is open the client pings this often, and fails its streams with
        /// UNAVAILABLE after `streamSilenceTimeout` without any message from the server.
        public var streamPingInterval: Duration = .seconds(5)
        public var streamSilenceTimeout: Duration = .seconds(15)
        /// ZMTP heartbeats, as on the server.
        public var heartbeatInterval: Duration = .seconds(2)
        public var heartbeatTimeout: Duration = .seconds(6)
        /// CURVE keys for a server with security on; nil = plain. A server that refuses the
        /// key ends calls at once with UNAUTHENTICATED; a wrong server key, at their deadline
        /// with DEADLINE_EXCEEDED, saying so (a socket monitor tells them apart).
        public var security: ClientSecurity?

        public init() {}
    }

    /// The server's endpoint, as given.
    public let endpoint: String
    public let configuration: Configuration
    let engine: RpcClientEngine
    private let loop: TransportLoop
    private let ownsLoop: Bool
    private let closed = OnceFlag()

    /// Connects a DEALER on a loop thread of its own. Connecting does not wait for the server:
    /// calls made before the connection is up wait for it (within their deadline).
    public convenience init(endpoint: String, configuration: Configuration = .init()) throws(TransportError) {
        let loop = try TransportLoop()
        try self.init(loop: loop, endpoint: endpoint, configuration: configuration, ownsLoop: true)
        loop.start()
    }

    /// Connects a DEALER on an existing loop (many clients, one thread).
    public convenience init(loop: TransportLoop, endpoint: String, configuration: Configuration = .init()) throws(TransportError) {
        try self.init(loop: loop, endpoint: endpoint, configuration: configuration, ownsLoop: false)
    }

    private init(loop: TransportLoop, endpoint: String, configuration: Configuration, ownsLoop: Bool) throws(TransportError) {
        let socket = try ZMQSocket(.dealer)
        try socket.set(.linger, 0)
        try socket.set(.immediate, true)
        try socket.set(.maximumMessageSize, Int64(configuration.maximumMessageBytes))
        try socket.set(.heartbeatInterval, configuration.heartbeatInterval.socketMilliseconds)
        try socket.set(.heartbeatTimeout, configuration.heartbeatTimeout.socketMilliseconds)
        try socket.set(.heartbeatTTL, configuration.heartbeatTimeout.socketMilliseconds)
        try configuration.security?.apply(to: socket)
        self.endpoint = endpoint
        self.configuration = configuration
        self.loop = loop
        self.ownsLoop = ownsLoop
        let engine = RpcClientEngine(endpoint: endpoint, configuration: configuration, socket: socket, loop: loop.engine)
        self.engine = engine
        // Watched from before the connect, so that no event of the first attempt is missed.
        try ClientConnectionWatch.start(watching: socket, loop: loop.engine) { engine.connectionChanged($0) }
        loop.engine.attach(engine)
        try socket.connect(endpoint)
    }

    deinit {
        close()
    }

    /// Whether a handshake with the server has ever succeeded on this client: a call that timed
    /// out without it never reached the server (down, a wrong address or key), and trying again
    /// the same way is no use.
    public var hasConnected: Bool { engine.hasConnected }

    /// Calls a unary method. Throws the server's status, DEADLINE_EXCEEDED when no answer came
    /// in time, CANCELLED when the calling task is cancelled (the server is told).
    public func call<Req, Res>(
        _ method: RpcMethod<Req, Res>, _ request: Req, timeout: Duration? = nil, metadata: [String: String] = [:]
    ) async throws(RpcError) -> Res {
        guard !method.serverStreaming else {
            throw RpcError(.invalidArgument, "\(method.path) is server-streaming: use stream()")
        }
        let payload: Data
        do {
            payload = try request.serializedBytes()
        } catch {
            throw RpcError(.internal, "cannot encode a \(Req.protoMessageName): \(error)")
        }
        let reply = await exchange(
            method: method.path, payload: payload, metadata: metadata, timeout: timeout ?? configuration.defaultTimeout,
            control: .call)
        return try WireCoding.decodeResponse(Res.self, try reply.get()).get()
    }

    /// Calls a server-streaming method. The stream yields the items and ends with the call: it
    /// throws the call's `RpcError` unless it ended OK. Dropping the stream (or cancelling the
    /// task iterating it) before its end sends CANCEL.
    public func stream<Req, Res>(
        _ method: RpcMethod<Req, Res>, _ request: Req, timeout: Duration? = nil, metadata: [String: String] = [:]
    ) -> AsyncThrowingStream<Res, Error> {
        let (stream, continuation) = AsyncThrowingStream<Res, Error>.makeStream()
        let payload: Data
        do {
            payload = try request.serializedBytes()
        } catch {
            continuation.finish(throwing: RpcError(.internal, "cannot encode a \(Req.protoMessageName): \(error)"))
            return stream
        }
        let timeout = timeout ?? configuration.defaultStreamTimeout
        let id = engine.allocateID()
        let frames: [[UInt8]]
        switch engine.requestFrames(id: id, method: method.path, payload: payload, metadata: metadata, timeout: timeout, control: .call) {
        case .success(let built): frames = built
        case .failure(let error):
            continuation.finish(throwing: error)
            return stream
        }
        let receiver = StreamReceiver(
            deliver: { payload in
                switch WireCoding.decodeResponse(Res.self, payload) {
                case .success(let item):
                    continuation.yield(item)
                    return nil
                case .failure(let error):
                    return error
                }
            },
            finish: { error in
                if let error { continuation.finish(throwing: error) } else { continuation.finish() }
            })
        let engine = self.engine
        continuation.onTermination = { termination in
            if case .cancelled = termination { engine.abandon(id, RpcError(.cancelled, "the stream was dropped")) }
        }
        engine.start(id: id, waiter: .stream(receiver), timeout: timeout, frames: frames, honourTaskCancellation: false)
        return stream
    }

    /// Asks the server for a PONG: proves the connection and the server's loop are alive.
    public func ping(timeout: Duration) async throws(RpcError) {
        _ = try await exchange(method: "", payload: Data(), metadata: [:], timeout: timeout, control: .ping).get()
    }

    /// Fails every call in flight with CANCELLED, closes the socket and, for a client with its
    /// own loop, stops that loop. Later calls fail at once. Safe to call twice.
    public func close() {
        guard closed.claim() else { return }
        engine.close()
        if ownsLoop { loop.stop() } else { loop.engine.detach(engine) }
    }

    private func exchange(
        method: String, payload: Data, metadata: [String: String], timeout: Duration,
        control: Earshot_V1_RequestEnvelope.Control
    ) async -> Result<Data, RpcError> {
        let engine = self.engine
        let id = engine.allocateID()
        let frames: [[UInt8]]
        switch engine.requestFrames(id: id, method: method, payload: payload, metadata: metadata, timeout: timeout, control: control) {
        case .success(let built): frames = built
        case .failure(let error): return .failure(error)
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<Data, RpcError>, Never>) in
                let waiter: ClientWaiter = control == .ping ? .ping(continuation) : .unary(continuation)
                engine.start(id: id, waiter: waiter, timeout: timeout, frames: frames, honourTaskCancellation: true)
            }
        } onCancel: {
            engine.abandon(id, RpcError(.cancelled, "the calling task was cancelled"))
        }
    }
}
