import CZMQ
import Synchronization

/// Counts a CURVE server socket's failed handshakes through ZeroMQ's socket monitor: the ones
/// the ZAP handler never sees, because they fail before a key is known — a client using the
/// wrong server key, a plain client, garbage from a scanner, a connection that gives up half
/// way. (Unknown keys reach ZAP and are counted there.) The counts go to the socket's allow-list.
///
/// libzmq sends monitor events with blocking sends from its own threads, so the reader must
/// outlive the monitoring: the watched socket's `close()` stops monitoring first, and this
/// attachment stops it too before closing its reader (whichever of the two the loop closes
/// first). It leaves the loop by itself once the watched socket is closed.
final class HandshakeMonitor: LoopAttachment, @unchecked Sendable {
    private static let next = Atomic<Int>(0)
    private let watched: ZMQSocket
    private let pair: ZMQSocket
    private let allowList: ClientAllowList
    private let loop: LoopCore
    // Loop thread only.
    private var isDetached = false
    /// Detaching was asked for (it takes effect on the next loop turn).
    private var leaving = false

    /// Starts monitoring `server` (call before it binds) and attaches to `loop`.
    @discardableResult
    static func start(watching server: ZMQSocket, allowList: ClientAllowList, loop: LoopCore) throws(TransportError) -> HandshakeMonitor {
        let endpoint = "inproc://earshot.handshake-monitor.\(next.add(1, ordering: .relaxed).newValue)"
        let events = ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL
        try server.monitor(endpoint, events: events)
        let pair = try ZMQSocket(.pair)
        try pair.set(.linger, 0)
        try pair.connect(endpoint)
        let monitor = HandshakeMonitor(watched: server, pair: pair, allowList: allowList, loop: loop)
        loop.attach(monitor)
        return monitor
    }

    private init(watched: ZMQSocket, pair: ZMQSocket, allowList: ClientAllowList, loop: LoopCore) {
        self.watched = watched
        self.pair = pair
        self.allowList = allowList
        self.loop = loop
    }

    var pollSocket: ZMQSocket? { isDetached ? nil : pair }

    func socketReadable(now: ContinuousClock.Instant) {
        // An event is two frames: 6 bytes (event id u16, value u32, host order), then the endpoint.
        for _ in 0..<64 {
            guard let message = try? pair.receive(maximumFrames: 2), let head = message.frames.first, head.count >= 6 else { return }
            let (event, value) = head.withUnsafeBytes { ($0.loadUnaligned(as: UInt16.self), $0.loadUnaligned(fromByteOffset: 2, as: UInt32.self)) }
            switch Int32(event) {
            case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
                allowList.recordFailedHandshake(Self.reason(protocolError: Int32(bitPattern: value)))
            case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL:
                allowList.recordFailedHandshake("a connection closed before finishing its handshake")
            default:
                break
            }
        }
    }

    /// Asked before every poll; also where the monitor notices that its socket was closed
    /// (a server dropped, a publisher's socket replaced) and leaves the loop.
    func nextWakeup() -> ContinuousClock.Instant? {
        if watched.isClosed, !isDetached, !leaving {
            leaving = true
            loop.detach(self)
        }
        return nil
    }

    func timerFired(now: ContinuousClock.Instant) {}

    func detached() {
        isDetached = true
        watched.stopMonitoring()
        pair.close()
    }

    /// What a protocol error most likely means, in the words an administrator needs.
    static func reason(protocolError code: Int32) -> String {
        switch code {
        case ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC:
            "a CURVE handshake that does not decrypt (a client with the wrong server public key?)"
        case ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH:
            "a client without CURVE keys (plain) or with another mechanism"
        default:
            "a malformed handshake (ZMTP protocol error 0x\(String(UInt32(bitPattern: code), radix: 16)))"
        }
    }
}
