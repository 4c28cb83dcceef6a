import EarshotWire
import Foundation
import Testing

@testable import EarshotTransport

/// What a scanner or a broken client sends to a CURVE port, written byte by byte on a plain TCP
/// socket: each connection is closed without being admitted, and listed clients are served
/// throughout.
@Suite("malformed handshakes") struct MalformedHandshakeTests {
    /// ZMTP 3.0 greeting (64 bytes) naming `mechanism`, as a client.
    static func greeting(_ mechanism: String) -> [UInt8] {
        var bytes: [UInt8] = [0xFF] + [UInt8](repeating: 0, count: 8) + [0x7F, 3, 0]
        bytes += Array(mechanism.utf8) + [UInt8](repeating: 0, count: 20 - mechanism.utf8.count)
        return bytes + [UInt8](repeating: 0, count: 32)
    }

    /// A CurveZMQ HELLO command of the right size whose key and box are `fill`.
    static func hello(fill: UInt8) -> [UInt8] {
        let body: [UInt8] = [5] + Array("HELLO".utf8) + [1, 0] + [UInt8](repeating: 0, count: 72)
            + [UInt8](repeating: fill, count: 32 + 8 + 80)
        return [0x04, UInt8(body.count)] + body
    }

    static let cases: [(String, [UInt8])] = [
        ("random bytes", (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 73 &+ 11) }),
        ("NULL mechanism (a plain client)", greeting("NULL") + [0x04, 7, 5] + Array("READY".utf8)),
        ("PLAIN mechanism", greeting("PLAIN")),
        ("CURVE HELLO with a zero key and a garbage box", greeting("CURVE") + hello(fill: 0)),
        ("CURVE HELLO with a garbage key and box", greeting("CURVE") + hello(fill: 0xA5)),
        ("CURVE HELLO cut short", greeting("CURVE") + Array(hello(fill: 1).prefix(60))),
        ("a greeting cut short, then silence", Array(greeting("CURVE").prefix(20))),
    ]

    @Test func everyMalformedHandshakeIsClosedAndNobodyIsAdmitted() async throws {
        let secure = try SecureServer()
        let publisher = try EventPublisher(loop: secure.loop, endpoints: ["tcp://127.0.0.1:0"], epoch: 3,
                                           security: ServerSecurity(keyPair: secure.keyPair, allowList: secure.allowList))
        func port(_ endpoint: String) throws -> UInt16 { try #require(endpoint.split(separator: ":").last.flatMap { UInt16($0) }) }
        let ports = [("RPC", try port(secure.endpoint)), ("events", try port(publisher.boundEndpoints[0]))]
        let outcomes = try await withThrowingTaskGroup(of: (String, RawTCP.Outcome).self) { group in
            for (socket, port) in ports {
                for (name, bytes) in Self.cases {
                    group.addTask { ("\(socket): \(name)", try await RawTCP.exchange(port: port, bytes, within: 20)) }
                }
            }
            var all: [(String, RawTCP.Outcome)] = []
            for try await outcome in group { all.append(outcome) }
            return all
        }
        for (name, outcome) in outcomes {
            #expect(outcome == .closed, "\(name): \(outcome)")
        }
        let listed = try secure.client(secure.clientKeys[.viewer])
        defer { listed.close() }
        #expect(try await listed.call(SecureServer.viewing, Echo.request("still here")).service == "still here")
        #expect(secure.userIDs.all == ["viewer-1:viewer"], "only the listed client reached a handler")
        #expect(publisher.statistics.published > 0)
        // The socket monitors count each handshake once (random bytes are refused before a
        // handshake starts); none of them reached ZAP.
        #expect(secure.allowList.rejections.failedHandshakes == 2 * (Self.cases.count - 1))
        #expect(secure.allowList.rejections.count == 0)
    }
}

/// A plain TCP client for speaking bytes to a ZeroMQ port.
enum RawTCP {
    enum Outcome: Equatable {
        /// The server closed (or reset) the connection.
        case closed
        /// Still open when the time ran out; the bytes that came back.
        case stillOpen(received: Int)
    }

    /// `sendAndWaitForClose` on a thread of its own: it blocks for seconds, and a blocked task
    /// would hold one of the few threads every other test's tasks run on.
    static func exchange(port: UInt16, _ bytes: [UInt8], within seconds: Int) async throws -> Outcome {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { try sendAndWaitForClose(port: port, bytes, within: seconds) })
            }
        }
    }

    /// Connects to 127.0.0.1:`port`, writes `bytes`, then reads until the server closes the
    /// connection or `seconds` pass. Blocks.
    static func sendAndWaitForClose(port: UInt16, _ bytes: [UInt8], within seconds: Int) throws -> Outcome {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TransportError(operation: "socket", code: errno) }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw TransportError(operation: "connect", code: errno) }
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var received = 0
        var buffer = [UInt8](repeating: 0, count: 512)
        let giveUp = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < giveUp {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { return .closed }
            if n < 0 {
                if errno == EAGAIN || errno == EINTR { continue }
                return .closed  // ECONNRESET
            }
            received += n
        }
        return .stillOpen(received: received)
    }
}
