import EarshotSync

/// One thread ("earshot-io") owning every socket attached to it, waiting in `zmq_poll` over those
/// sockets and an eventfd.
///
/// libzmq sockets are single-threaded, so all socket work happens here, and nothing here may
/// block on a peer: sends use `ZMQ_DONTWAIT` and a full queue is an answer, not a wait. Other
/// threads hand work over with `execute`, which queues a closure and wakes the poll through the
/// eventfd. Handlers never run here; they run as Swift tasks.
public final class TransportLoop: Sendable {
    private enum Phase {
        case idle
        case running(NamedThread)
        case stopped
    }

    let engine: LoopEngine
    private let phase = Locked(Phase.idle)

    public init() throws(TransportError) {
        engine = try LoopEngine()
    }

    deinit {
        stop()
    }

    /// Starts the thread. Work queued before runs first. Calling it again does nothing.
    public func start() {
        phase.withLock { phase in
            guard case .idle = phase else { return }
            let engine = self.engine
            do {
                phase = .running(try NamedThread(name: "earshot-io") { engine.run() })
            } catch {
                // Only EAGAIN (no threads left) is possible. Leave the loop idle: work stays
                // queued and `stop` closes the sockets.
            }
        }
    }

    /// Ends the loop: waits for the thread to finish what it is doing, closes every attached
    /// socket and fails whatever waited on them. Work queued later is dropped. Calling it again,
    /// or from the loop thread itself (then the thread is not waited for), is safe.
    public func stop() {
        let previous = phase.withLock { phase -> Phase in
            defer { phase = .stopped }
            return phase
        }
        switch previous {
        case .idle:
            engine.finish()
        case .running(let thread):
            engine.requestStop()
            if thread.isCurrent { thread.detach() } else { thread.join() }
        case .stopped:
            break
        }
    }

    /// Runs `work` on the loop thread, after work queued before it. Never blocks. Dropped once
    /// the loop has stopped.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        engine.enqueue(work)
    }
}
