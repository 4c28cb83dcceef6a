import CZMQ
import Synchronization

/// Watches a client's DEALER through libzmq's socket monitor and keeps its `ConnectionStory`:
/// the core reads it to say why a call was never sent, and is told at once when libzmq gives up
/// on the server (a refused key, a security mismatch), so calls end then, not at their deadline.
/// Like the server's monitor, it leaves the loop by itself once the watched socket is closed.
final class ClientConnectionWatch: LoopAttachment, @unchecked Sendable {
    private static let next = Atomic<Int>(0)
    private static let events =
        ZMQ_EVENT_CONNECTED | ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL
        | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH

    private let watched: ZMQSocket
    private let pair: ZMQSocket
    private let loop: LoopCore
    /// Loop thread: the story changed.
    private let onChange: (ConnectionStory) -> Void
    // Loop thread only.
    private var story = ConnectionStory.noAnswer
    private var isDetached = false
    private var leaving = false

    /// Starts watching `client` (call before it connects) and attaches to `loop`.
    @discardableResult
    static func start(watching client: ZMQSocket, loop: LoopCore,
                      onChange: @escaping (ConnectionStory) -> Void) throws(TransportError) -> ClientConnectionWatch {
        let endpoint = "inproc://earshot.client-monitor.\(next.add(1, ordering: .relaxed).newValue)"
        try client.monitor(endpoint, events: events)
        let pair = try ZMQSocket(.pair)
        try pair.set(.linger, 0)
        try pair.set(.receiveHighWaterMark, 0)  // libzmq's I/O thread must never wait on this reader
        try pair.connect(endpoint)
        let watch = ClientConnectionWatch(watched: client, pair: pair, loop: loop, onChange: onChange)
        loop.attach(watch)
        return watch
    }

    private init(watched: ZMQSocket, pair: ZMQSocket, loop: LoopCore, onChange: @escaping (ConnectionStory) -> Void) {
        self.watched = watched
        self.pair = pair
        self.loop = loop
        self.onChange = onChange
    }

    var pollSocket: ZMQSocket? { isDetached ? nil : pair }

    func socketReadable(now: ContinuousClock.Instant) {
        for _ in 0..<64 {
            guard let event = MonitorEvent.receive(from: pair) else { return }
            let next = story.after(event)
            if next != story {
                story = next
                onChange(next)
            }
        }
    }

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
}
