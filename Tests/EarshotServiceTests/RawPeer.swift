import EarshotWire
import Foundation

@testable import EarshotTransport

/// A raw DEALER that sends whatever frames a test gives it: garbage, foreign signatures,
/// oversized messages. It connects, sends, lets libzmq deliver, and goes away.
enum RawPeer {
    static func send(to endpoint: String, security: ClientSecurity? = nil, frames: [[UInt8]]) throws {
        let socket = try ZMQSocket(.dealer)
        try socket.set(.linger, 1000)
        try security?.apply(to: socket)
        try socket.connect(endpoint)
        usleep(100_000)  // let the connection complete before sending
        _ = socket.send(frames)
        usleep(200_000)
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
        let giveUp = ContinuousClock.now + timeout
        while true {
            let late = ContinuousClock.now >= giveUp
            if let message = try socket.receive(), message.frames.count == 2 {
                return try Earshot_V1_ResponseEnvelope(serializedBytes: message.frames[1])
            }
            if late { return nil }
            try await Task.sleep(for: .milliseconds(1))
        }
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
