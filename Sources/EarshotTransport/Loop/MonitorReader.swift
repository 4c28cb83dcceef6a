import CZMQ
import Synchronization

/// One event from libzmq's socket monitor: the event (`ZMQ_EVENT_…`) and its value (a
/// descriptor, an error or a status code, by event).
struct MonitorEvent {
    let event: Int32
    let value: Int32
}

/// The reading end of libzmq's socket monitor on one socket, for a loop attachment that acts on
/// its events (`SocketMonitor` on servers, `ClientConnectionWatch` on clients).
///
/// libzmq sends monitor events with blocking sends from its own I/O thread, so the reader takes
/// them without limit (`ZMQ_RCVHWM` 0): a loop busy for a moment must not stall libzmq's I/O.
/// It must also outlive the monitoring: the watched socket's `close()` stops monitoring first,
/// and `close()` here stops it too before closing the reader. Loop thread only, after `init`.
final class MonitorReader {
    private static let next = Atomic<Int>(0)

    let watched: ZMQSocket
    private let pair: ZMQSocket
    private let loop: LoopEngine
    private var isClosed = false
    /// Leaving the loop was asked for (it takes effect on the next loop turn).
    private var leaving = false

    /// Starts monitoring `events` of `watched` (call before it binds or connects).
    init(watching watched: ZMQSocket, events: Int32, loop: LoopEngine) throws(TransportError) {
        let endpoint = "inproc://earshot.socket-monitor.\(Self.next.add(1, ordering: .relaxed).newValue)"
        try watched.monitor(endpoint, events: events)
        let pair = try ZMQSocket(.pair)
        try pair.set(.linger, 0)
        try pair.set(.receiveHighWaterMark, 0)
        try pair.connect(endpoint)
        self.watched = watched
        self.pair = pair
        self.loop = loop
    }

    /// The attachment's poll socket.
    var pollSocket: ZMQSocket? { isClosed ? nil : pair }

    /// The next event waiting, without waiting; nil when none (or once closed).
    func next() -> MonitorEvent? {
        // An event is two frames: 6 bytes (event id u16, value u32, host order), then the endpoint.
        guard !isClosed, let message = try? pair.receive(maximumFrames: 1), let head = message.frames.first, head.count >= 6 else { return nil }
        let (event, value) = head.withUnsafeBytes { ($0.loadUnaligned(as: UInt16.self), $0.loadUnaligned(fromByteOffset: 2, as: UInt32.self)) }
        return MonitorEvent(event: Int32(event), value: Int32(bitPattern: value))
    }

    /// From `owner.nextWakeup()`: once the watched socket is closed (a server dropped, a
    /// publisher's socket replaced, a client closed), `owner` leaves the loop.
    func leaveOnceWatchedCloses(_ owner: any LoopAttachment) {
        guard watched.isClosed, !isClosed, !leaving else { return }
        leaving = true
        loop.detach(owner)
    }

    /// From `owner.detached()`.
    func close() {
        isClosed = true
        watched.stopMonitoring()
        pair.close()
    }

    // A reader dropped without `close()` still stops the monitoring before its end goes away:
    // libzmq's I/O thread would otherwise block for good sending the next event to a PAIR with
    // no peer, holding the watched socket's monitor lock.
    deinit {
        if !isClosed { close() }
    }
}
