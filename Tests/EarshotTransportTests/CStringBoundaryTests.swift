import Testing

@testable import EarshotTransport

/// Endpoints crossing into libzmq: one with a NUL inside is refused, never cut at the NUL to
/// name another.
struct CStringBoundaryTests {
    @Test func endpointsWithANULAreRefused() throws {
        let socket = try ZMQSocket(.pub)
        defer { socket.close() }
        for endpoint in ["tcp://127.0.0.1:0\u{0}", "inproc://boundary\u{0}x", "ipc:///tmp/earshot-boundary\u{0}x"] {
            #expect(throws: TransportError.self) { try socket.bind(endpoint) }
            #expect(throws: TransportError.self) { try socket.connect(endpoint) }
        }
    }
}
