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
