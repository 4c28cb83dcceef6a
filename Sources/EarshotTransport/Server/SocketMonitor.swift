import CZMQ

/// Watches a server socket through ZeroMQ's socket monitor (one monitor per socket is all libzmq
/// allows, so this one does every job):
///
/// - each accepted connection goes past the `ConnectionLimiter`, which may shut it at once;
/// - each closed connection (the peer left, a heartbeat or handshake timed out) is reported to
///   the socket's owner (`onDisconnect`, with the descriptor): an RPC server cancels the calls of
///   a client that is gone;
/// - handshakes that fail before a key is known — a client with the wrong server key, a plain
///   client, garbage from a scanner, a connection that gives up half way — are counted in the
///   allow-list. (Unknown keys reach the ZAP handler and are counted there.)
///
/// Events come through a `MonitorReader`; the monitor leaves the loop by itself once the
/// watched socket is closed.
final class SocketMonitor: LoopAttachment, @unchecked Sendable {
    private static let events =
        ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL
    /// Events taken per look, before they are acted on together (see `drain`).
    private static let batchSize = 64

    private let reader: MonitorReader
    private let allowList: ClientAllowList?
    private let limiter: ConnectionLimiter?
    /// Loop thread: called with the descriptor of every connection that closed.
    private let onDisconnect: ((Int32) -> Void)?
    // Loop thread only.
    private var batch: [(event: Int32, value: Int32)] = []

    /// Starts monitoring `server` (call before it binds) and attaches to `loop`.
    @discardableResult
    static func start(
        watching server: ZMQSocket, allowList: ClientAllowList?, limiter: ConnectionLimiter?, loop: LoopEngine,
        onDisconnect: ((Int32) -> Void)? = nil
    ) throws(TransportError) -> SocketMonitor {
        let reader = try MonitorReader(watching: server, events: events, loop: loop)
        let monitor = SocketMonitor(reader: reader, allowList: allowList, limiter: limiter, onDisconnect: onDisconnect)
        loop.attach(monitor)
        return monitor
    }

    private init(reader: MonitorReader, allowList: ClientAllowList?, limiter: ConnectionLimiter?, onDisconnect: ((Int32) -> Void)?) {
        self.reader = reader
        self.allowList = allowList
        self.limiter = limiter
        self.onDisconnect = onDisconnect
        batch.reserveCapacity(Self.batchSize)
    }

    var pollSocket: ZMQSocket? { reader.pollSocket }

    func socketReadable(now: ContinuousClock.Instant) {
        // Bounded, so that a flood of connections cannot keep the loop from its other sockets.
        for _ in 0..<16 where drain() == Self.batchSize {}
    }

    /// Acts on the events waiting now (at most one batch); returns how many there were. The RPC
    /// server calls it before it looks at each message, so that the end of a connection is known
    /// before a message on a descriptor that libzmq has since given to a new connection.
    @discardableResult
    func drain() -> Int {
        batch.removeAll(keepingCapacity: true)
        while batch.count < Self.batchSize, let e = reader.next() {
            batch.append((e.event, e.value))
        }
        for (index, (event, value)) in batch.enumerated() {
            switch event {
            case ZMQ_EVENT_ACCEPTED:
                // A connection that already ended within this batch is left alone: its
                // descriptor may be someone else's by now.
                let endedSince = batch[(index + 1)...].contains { $0.event == ZMQ_EVENT_DISCONNECTED && $0.value == value }
                if !endedSince { limiter?.accepted(value, by: ObjectIdentifier(reader.watched)) }
            case ZMQ_EVENT_DISCONNECTED:
                limiter?.closed(value, by: ObjectIdentifier(reader.watched))
                onDisconnect?(value)
            case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
                allowList?.recordFailedHandshake(Self.reason(protocolError: value))
            case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL:
                allowList?.recordFailedHandshake("a connection closed before finishing its handshake")
            default:
                break
            }
        }
        return batch.count
    }

    /// Asked before every poll; also where the monitor notices that its socket was closed
    /// (a server dropped, a publisher's socket replaced) and leaves the loop.
    func nextWakeup() -> ContinuousClock.Instant? {
        reader.leaveOnceWatchedCloses(self)
        return nil
    }

    func timerFired(now: ContinuousClock.Instant) {}

    func detached() {
        reader.close()
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
