import EarshotSync
import EarshotTestSupport
import EarshotWire
import Foundation
import Synchronization
import Testing

@testable import EarshotTransport

/// Methods of a test service, with messages borrowed from earshot.v1.
enum Echo {
    /// Replies with the request.
    static let say = RpcMethod<Earshot_V1_HealthCheckRequest, Earshot_V1_HealthCheckRequest>("/earshot.test.Echo/Say")
    /// Sleeps until cancelled (or `Gate` opens), then replies.
    static let hold = RpcMethod<Earshot_V1_HealthCheckRequest, Earshot_V1_HealthCheckRequest>("/earshot.test.Echo/Hold")
    /// Streams `Int(request.service)` items "0", "1"… then ends OK.
    static let count = RpcMethod<Earshot_V1_HealthCheckRequest, Earshot_V1_HealthCheckRequest>(
        "/earshot.test.Echo/Count", serverStreaming: true)
    /// Streams an item every 5 ms until the call is over; records why it ended.
    static let ticks = RpcMethod<Earshot_V1_HealthCheckRequest, Earshot_V1_HealthCheckRequest>(
        "/earshot.test.Echo/Ticks", serverStreaming: true)
    /// Streams 64 KiB items as fast as it may until `send` throws; records the error.
    static let flood = RpcMethod<Earshot_V1_HealthCheckRequest, Earshot_V1_MatchSignatureRequest>(
        "/earshot.test.Echo/Flood", serverStreaming: true)
    /// `say` with the wrong request type: its payload (invalid UTF-8 in field 1) cannot decode
    /// as the server's HealthCheckRequest.
    static let sayWrongType = RpcMethod<Earshot_V1_MatchSignatureRequest, Earshot_V1_HealthCheckRequest>("/earshot.test.Echo/Say")
    static let missing = RpcMethod<Earshot_V1_HealthCheckRequest, Earshot_V1_HealthCheckRequest>("/earshot.test.Echo/Missing")

    static func request(_ text: String) -> Earshot_V1_HealthCheckRequest {
        var request = Earshot_V1_HealthCheckRequest()
        request.service = text
        return request
    }
}

/// A flag handlers wait on.
final class Gate: Sendable {
    private let isOpen = Atomic<Bool>(false)

    func open() { isOpen.store(true, ordering: .releasing) }

    /// Returns when the gate opens or the call is over.
    func wait(_ call: RpcCall) async {
        while !isOpen.load(ordering: .acquiring) && !call.isCancelled {
            try? await Task.sleep(for: .milliseconds(2))
        }
    }
}

/// Values handlers report to the test.
final class Recorder<Value: Sendable>: Sendable {
    private let values = Locked<[Value]>([])

    func record(_ value: Value) { values.withLock { $0.append(value) } }
    var all: [Value] { values.withLock { $0 } }
    var first: Value? { all.first }
}

/// A loop with an RPC server on a free loopback port, serving the `Echo` methods.
final class EchoServer: Sendable {
    let loop: TransportLoop
    let server: RpcServer
    let endpoint: String
    let gate = Gate()
    /// Why `hold`, `ticks` and `flood` handlers ended.
    let endings = Recorder<RpcError>()
    /// The metadata and peer each `say` call saw.
    let seen = Recorder<RpcCall>()

    init(_ configure: (inout RpcServer.Configuration) -> Void = { _ in }) throws {
        var configuration = RpcServer.Configuration(endpoints: ["tcp://127.0.0.1:0"])
        configure(&configuration)
        loop = try TransportLoop()
        server = try RpcServer(loop: loop, configuration: configuration)
        endpoint = server.boundEndpoints[0]
        let gate = self.gate
        let endings = self.endings
        let seen = self.seen
        server.register(Echo.say) { request, call in
            seen.record(call)
            return request
        }
        server.register(Echo.hold) { request, call throws(RpcError) in
            await gate.wait(call)
            if let reason = call.cancellationReason() {
                endings.record(reason)
                throw reason
            }
            return request
        }
        server.register(streaming: Echo.count) { request, call, writer throws(RpcError) in
            guard let n = Int(request.service) else { throw RpcError(.invalidArgument, "not a number") }
            for i in 0..<n { try writer.send(Echo.request(String(i))) }
            if request.service == "3" { throw RpcError(.notFound, "three is not enough") }
        }
        server.register(streaming: Echo.ticks) { _, call, writer throws(RpcError) in
            var i = 0
            while true {
                do throws(RpcError) {
                    try writer.send(Echo.request(String(i)))
                } catch {
                    endings.record(error)
                    throw error
                }
                i += 1
                try? await Task.sleep(for: .milliseconds(5))
                if let reason = call.cancellationReason() {
                    endings.record(reason)
                    throw reason
                }
            }
        }
        server.register(streaming: Echo.flood) { _, call, writer throws(RpcError) in
            var item = Earshot_V1_MatchSignatureRequest()
            item.signature = Data(repeating: 7, count: 64 << 10)
            for i in 0..<100_000 {
                do throws(RpcError) {
                    try writer.send(item)
                } catch {
                    endings.record(error)
                    throw error
                }
                // Pace a little so the loop, not the hand-over queue, meets the full socket.
                if i % 8 == 7 { try? await Task.sleep(for: .milliseconds(1)) }
            }
        }
        loop.start()
    }

    func stop() {
        loop.stop()
    }

    /// Proves the server still serves: a new, well-behaved client gets a correct answer.
    func expectHealthy(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let client = try makeClient(endpoint)
        defer { client.close() }
        let reply = try await client.call(Echo.say, Echo.request("still here"))
        #expect(reply.service == "still here", sourceLocation: sourceLocation)
    }
}

/// A bare DEALER that sends whatever a test wants, for the faults a real client never makes.
final class RawDealer: @unchecked Sendable {
    let socket: ZMQSocket

    init(_ endpoint: String, maximumMessageBytes: Int64 = -1) throws {
        socket = try ZMQSocket(.dealer)
        try socket.set(.linger, 0)
        try socket.connect(endpoint)
    }

    deinit {
        socket.close()
    }

    func send(_ frames: [[UInt8]]) {
        #expect(socket.send(frames) == .sent)
    }

    func send(_ envelope: Earshot_V1_RequestEnvelope, signature: String = rpcSignature) throws {
        send([Array(signature.utf8), try envelope.serializedBytes()])
    }

    /// The next reply, waiting without blocking a thread, or nil after `timeout`.
    func receive(timeout: Duration = .seconds(60)) async throws -> Earshot_V1_ResponseEnvelope? {
        let socket = self.socket
        let message: ZMQReceivedMessage
        do {
            message = try await eventually("a reply", within: timeout, every: .milliseconds(1), { try socket.receive() }, until: { $0 != nil })!
        } catch is WaitTimedOut {
            return nil
        }
        #expect(message.frames.count == 2)
        #expect(message.frames[0] == Array(rpcSignature.utf8))
        return try Earshot_V1_ResponseEnvelope(serializedBytes: message.frames[1])
    }

    static func envelope(
        _ id: UInt64, _ method: String = Echo.say.path, payload: Data = Data(),
        control: Earshot_V1_RequestEnvelope.Control = .call
    ) -> Earshot_V1_RequestEnvelope {
        var envelope = Earshot_V1_RequestEnvelope()
        envelope.requestID = id
        envelope.method = method
        envelope.payload = payload
        envelope.control = control
        envelope.timeoutMs = 120_000  // long: see `makeClient`
        return envelope
    }
}

extension Result {
    /// The `RpcError` a task failed with (tasks erase typed throws).
    var failure: RpcError? {
        if case .failure(let error) = self { error as? RpcError } else { nil }
    }
}

/// Runs `body` and returns the `RpcError` it throws, nil if none.
func rpcError<T>(_ body: () async throws(RpcError) -> T) async -> RpcError? {
    do {
        _ = try await body()
        return nil
    } catch {
        return error
    }
}

/// An `ipc://` endpoint in the temporary directory that nothing listens on yet.
func temporaryIPCEndpoint() -> String {
    "ipc://" + FileManager.default.temporaryDirectory.appendingPathComponent("earshot-\(UUID().uuidString).sock").path
}

/// Removes the socket file of an `ipc://` endpoint (libzmq may leave it behind).
func removeIPCFile(_ endpoint: String) {
    try? FileManager.default.removeItem(atPath: String(endpoint.dropFirst("ipc://".count)))
}

/// A client whose calls wait long by default. Timeouts in these tests are long on purpose: they
/// only bound a failure. When the whole package's tests run in parallel on two cores, CPU-heavy
/// tests of other suites can hold every thread of Swift's cooperative pool for many seconds, and
/// handlers (tasks) wait meanwhile.
func makeClient(_ endpoint: String, _ configure: (inout RpcClient.Configuration) -> Void = { _ in }) throws -> RpcClient {
    var configuration = RpcClient.Configuration()
    configuration.defaultTimeout = .seconds(60)
    configure(&configuration)
    return try RpcClient(endpoint: endpoint, configuration: configuration)
}
