import EarshotTestSupport
import EarshotWire
import Foundation

@testable import EarshotTransport

/// A raw DEALER that sends whatever frames a test gives it: garbage, foreign signatures,
/// oversized messages. It connects, sends, lets libzmq deliver, and goes away. (Nothing on the
/// sending side tells when the frames arrived: a test that must know asks the daemon's counters.)
enum RawPeer {
    static func send(to endpoint: String, security: ClientSecurity? = nil, frames: [[UInt8]]) async throws {
        let socket = try ZMQSocket(.dealer)
        try socket.set(.linger, 1000)
        try security?.apply(to: socket)
        try socket.connect(endpoint)
        try await Task.sleep(for: .milliseconds(100))  // let the connection complete before sending
        _ = socket.send(frames)
        try await Task.sleep(for: .milliseconds(200))
        socket.close()
    }
}

/// A DEALER that speaks EARSHOT/1 by hand, with CURVE keys: for what a real client never does
/// (thousands of envelopes built to be expensive, calls left behind on a closed socket).
final class RawCurveDealer: @unchecked Sendable {
    let socket: ZMQSocket

    init(_ endpoint: String, security: ClientSecurity?) throws {
        socket = try ZMQSocket(.dealer)
        try socket.set(.linger, 0)
        try socket.set(.sendHighWaterMark, 0)
        try security?.apply(to: socket)
        try socket.connect(endpoint)
    }

    deinit { socket.close() }

    func send(_ envelope: [UInt8]) -> Bool {
        socket.send([Array(rpcSignature.utf8), envelope]) == .sent
    }

    /// The next reply, or nil after `timeout`.
    func receive(timeout: Duration) async throws -> Earshot_V1_ResponseEnvelope? {
        let socket = self.socket
        let message: ZMQReceivedMessage
        do {
            message = try await eventually("a reply", within: timeout, every: .milliseconds(1), {
                try socket.receive().flatMap { $0.frames.count == 2 ? $0 : nil }
            }, until: { $0 != nil })!
        } catch is WaitTimedOut {
            return nil
        }
        return try Earshot_V1_ResponseEnvelope(serializedBytes: message.frames[1])
    }

    /// An envelope calling `method` with `payload`.
    static func envelope(_ id: UInt64, _ method: String, payload: [UInt8] = [], timeoutMs: UInt32 = 60_000,
                         metadata: [String: String] = [:]) throws -> [UInt8] {
        var envelope = Earshot_V1_RequestEnvelope()
        envelope.requestID = id
        envelope.method = method
        envelope.payload = Data(payload)
        envelope.timeoutMs = timeoutMs
        envelope.metadata = metadata
        return try envelope.serializedBytes()
    }
}
