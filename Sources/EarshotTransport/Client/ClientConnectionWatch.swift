import CZMQ

/// Watches a client's DEALER through libzmq's socket monitor and keeps its `ConnectionStory`:
/// the engine reads it to say why a call was never sent, and is told at once when libzmq gives up
/// on the server (a refused key, a security mismatch), so calls end then, not at their deadline.
/// Like the server's monitor, it leaves the loop by itself once the watched socket is closed.
final class ClientConnectionWatch: LoopAttachment, @unchecked Sendable {
    private static let events =
        ZMQ_EVENT_CONNECTED | ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL
        | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH

    private let reader: MonitorReader
    /// Loop thread: the story changed.
    private let onChange: (ConnectionStory) -> Void
    // Loop thread only.
    private var story = ConnectionStory.noAnswer

    /// Starts watching `client` (call before it connects) and attaches to `loop`.
    @discardableResult
    static func start(watching client: ZMQSocket, loop: LoopEngine,
                      onChange: @escaping (ConnectionStory) -> Void) throws(TransportError) -> ClientConnectionWatch {
        let watch = ClientConnectionWatch(reader: try MonitorReader(watching: client, events: events, loop: loop), onChange: onChange)
        loop.attach(watch)
        return watch
    }

    private init(reader: MonitorReader, onChange: @escaping (ConnectionStory) -> Void) {
        self.reader = reader
        self.onChange = onChange
    }

    var pollSocket: ZMQSocket? { reader.pollSocket }

    func socketReadable(now: ContinuousClock.Instant) {
        for _ in 0..<64 {
            guard let event = reader.next() else { return }
            let next = story.after(event)
            if next != story {
                story = next
                onChange(next)
            }
        }
    }

    func nextWakeup() -> ContinuousClock.Instant? {
        reader.leaveOnceWatchedCloses(self)
        return nil
    }

    func timerFired(now: ContinuousClock.Instant) {}

    func detached() {
        reader.close()
    }
}
