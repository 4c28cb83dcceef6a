import FoundationEssentials
import EarshotWire
import SwiftProtobuf

#if canImport(Glibc)
    import Glibc
#endif

/// Serves RPC methods on a ROUTER socket, by the EARSHOT/1 call rules (docs/PROTOCOL.md).
///
/// The socket lives on a `TransportLoop`'s thread; handlers run as Swift tasks, so a slow
/// handler delays only its own call. Register handlers before clients call: a call to a method
/// not registered yet is answered UNIMPLEMENTED.
public final class RpcServer: Sendable {
    let engine: RpcServerEngine
    private let loop: TransportLoop
    /// The endpoints as bound, with real ports.
    public let boundEndpoints: [String]

    /// Creates the socket and binds every endpoint now, so that a port in use fails here.
    /// Start the loop (before or after) for calls to be served.
    public init(loop: TransportLoop, configuration: Configuration) throws(TransportError) {
        guard !configuration.endpoints.isEmpty else {
            throw TransportError(operation: "start an RPC server", code: EINVAL, message: "no endpoints configured")
        }
        let socket = try ZMQSocket(.router)
        try socket.set(.linger, 0)
        try socket.set(.routerMandatory, true)
        try socket.set(.maximumMessageSize, Int64(configuration.maximumMessageBytes))
        try socket.set(.sendHighWaterMark, configuration.highWaterMark)
        // Inbound, a client never needs more queued than it may have calls in flight (and a
        // few cancels and pings); beyond that libzmq stops reading its connection. The queue
        // is counted in messages, which may be 4 MiB each.
        try socket.set(.receiveHighWaterMark, Int32(clamping: min(Int(configuration.highWaterMark), 2 * configuration.maximumInFlightPerPeer + 16)))
        try PeerLiveness.apply(to: socket, timeout: configuration.peerTimeout)
        try socket.set(.handshakeInterval, configuration.handshakeTimeout.socketMilliseconds)
        // What a burst can get past a closed door before it closes (see ConnectionLimiter).
        try socket.set(.backlog, ConnectionLimiter.listenBacklog)
        try configuration.security?.apply(to: socket)
        let engine = RpcServerEngine(loop: loop.engine, socket: socket, configuration: configuration)
        // Before binding, so that no connection goes unseen; the engine is held weakly (the loop
        // holds the monitor until the socket closes).
        let monitor = try SocketMonitor.start(
            watching: socket, allowList: configuration.security?.allowList, limiter: configuration.connectionLimiter,
            loop: loop.engine, onDisconnect: { [weak engine] fd in engine?.connectionClosed(fd) })
        engine.attach(monitor: monitor)
        var bound: [String] = []
        for endpoint in configuration.endpoints {
            try socket.bind(endpoint)
            bound.append(try socket.lastEndpoint())
        }
        boundEndpoints = bound
        configuration.connectionLimiter?.guardListeners(of: ObjectIdentifier(socket), boundTo: bound)
        self.loop = loop
        self.engine = engine
        loop.engine.attach(engine)
        // A removed key's calls end at once, streams included.
        configuration.security?.allowList.onRemoval { [weak engine] in
            guard let engine else { return }
            engine.loop.enqueue { engine.cancelRevokedCalls() }
        }
    }

    deinit {
        loop.engine.detach(engine)
    }

    /// Serves a unary method: the handler's result (or thrown error) is the call's one END.
    /// With security on, callers below `role` get PERMISSION_DENIED; admin by default, so a
    /// method nobody classified is closed rather than open.
    public func register<Req, Res>(
        _ method: RpcMethod<Req, Res>, role: ClientRole = .admin,
        _ handler: @escaping @Sendable (Req, RpcCall) async throws(RpcError) -> Res
    ) {
        precondition(!method.serverStreaming, "\(method.path) is server-streaming: register it with register(streaming:)")
        engine.handlers.withLock {
            $0[method.path] = MethodHandler(minimumRole: role) { payload, call, _ in
                let request: Req
                switch WireCoding.decodeRequest(Req.self, payload) {
                case .success(let decoded): request = decoded
                case .failure(let error): return .failed(error)
                }
                let response: Res
                do throws(RpcError) {
                    response = try await handler(request, call)
                } catch {
                    return .failed(error)
                }
                do {
                    return .ok(try response.serializedBytes())
                } catch {
                    return .failed(RpcError(.internal, "cannot encode a \(Res.protoMessageName): \(error)"))
                }
            }
        }
    }

    /// Serves a server-streaming method: the handler sends items through the writer; its return
    /// ends the stream OK, its error ends it with that status.
    public func register<Req, Res>(
        streaming method: RpcMethod<Req, Res>, role: ClientRole = .admin,
        _ handler: @escaping @Sendable (Req, RpcCall, RpcStreamWriter<Res>) async throws(RpcError) -> Void
    ) {
        precondition(method.serverStreaming, "\(method.path) is unary: register it with register(_:_:)")
        engine.handlers.withLock {
            $0[method.path] = MethodHandler(minimumRole: role) { payload, call, sink in
                let request: Req
                switch WireCoding.decodeRequest(Req.self, payload) {
                case .success(let decoded): request = decoded
                case .failure(let error): return .failed(error)
                }
                do throws(RpcError) {
                    try await handler(request, call, RpcStreamWriter(sink))
                    return .ok(Data())
                } catch {
                    return .failed(error)
                }
            }
        }
    }

    /// New calls are answered UNAVAILABLE ("the server is shutting down"); calls in flight go on.
    public func stopAccepting() {
        engine.stopAccepting()
    }

    /// Stops accepting, waits up to `grace` for the calls in flight, then ends the rest with
    /// UNAVAILABLE (their handlers see `isCancelled`). Call before stopping the loop.
    public func shutdown(grace: Duration) async {
        engine.stopAccepting()
        let giveUp = ContinuousClock.now + grace
        // Polling is enough here: shutdown happens once, and a 5 ms step costs nothing.
        while engine.running.load(ordering: .relaxed) > 0 && ContinuousClock.now < giveUp && !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(5))
        }
        let engine = self.engine
        await loop.engine.barrier { engine.cancelAll(RpcError(.unavailable, "the server is shutting down")) }
    }

    /// Lets go of every handler (and what they hold, which may hold this server), once no call
    /// can reach them: after `shutdown`.
    public func removeHandlers() {
        engine.handlers.withLock { $0.removeAll() }
    }

    public var statistics: RpcServerStatistics {
        var statistics = engine.counters.withLock { $0 }
        statistics.inFlight = engine.running.load(ordering: .relaxed)
        return statistics
    }
}
