#if canImport(Glibc)
    import Glibc
#endif

import EarshotSync

/// The loop's machinery, shared by the `TransportLoop` handle and its thread (which must not
/// keep the handle alive, or dropping the last handle could never stop it).
///
/// Other threads reach the loop only through `enqueue`: a locked queue of closures plus an
/// eventfd to wake `zmq_poll`. Everything else here belongs to the loop thread.
final class LoopEngine: @unchecked Sendable {
    private struct Inbox {
        var work: [@Sendable () -> Void] = []
        var stopRequested = false
        /// Set when the loop has stopped: later work is dropped.
        var closed = false
    }

    let wake: EventFD
    private let inbox = Locked(Inbox())

    // Loop thread only.
    private var attachments: [any LoopAttachment] = []
    private var pollSet = ZMQPollSet()
    /// Which attachment each poll item after the eventfd belongs to.
    private var polled: [any LoopAttachment] = []

    init() throws(TransportError) {
        wake = try EventFD()
    }

    /// Queues `work` for the loop thread; returns false (dropping it) once the loop has stopped.
    @discardableResult
    func enqueue(_ work: @escaping @Sendable () -> Void) -> Bool {
        let (accepted, wasEmpty) = inbox.withLock { inbox -> (Bool, Bool) in
            if inbox.closed { return (false, false) }
            inbox.work.append(work)
            return (true, inbox.work.count == 1)
        }
        // The loop drains the eventfd before it takes the queue, so a signal is only needed
        // when the queue was empty: otherwise one is already pending for work not yet taken.
        if wasEmpty { wake.signal() }
        return accepted
    }

    func attach(_ attachment: any LoopAttachment) {
        let queued = enqueue { [self] in attachments.append(attachment) }
        if !queued { attachment.detached() }
    }

    func detach(_ attachment: any LoopAttachment) {
        let queued = enqueue { [self] in
            guard let index = attachments.firstIndex(where: { $0 === attachment }) else { return }
            attachments.remove(at: index)
            attachment.detached()
        }
        if !queued { attachment.detached() }
    }

    func requestStop() {
        inbox.withLock { $0.stopRequested = true }
        wake.signal()
    }

    /// The loop thread's body.
    func run() {
        while true {
            let work = inbox.withLock { inbox -> [@Sendable () -> Void]? in
                if inbox.stopRequested { return nil }
                defer { inbox.work.removeAll(keepingCapacity: true) }
                return inbox.work
            }
            guard let work else { break }
            for item in work { item() }

            var timeout = -1
            var now = ContinuousClock.now
            pollSet.removeAll()
            polled.removeAll(keepingCapacity: true)
            pollSet.add(fileDescriptor: wake.fileDescriptor)
            for attachment in attachments {
                if let socket = attachment.pollSocket {
                    pollSet.add(socket, writable: attachment.wantsWritable)
                    polled.append(attachment)
                }
                if let wakeup = attachment.nextWakeup() {
                    timeout = Self.merge(timeout, Self.milliseconds(until: wakeup, from: now))
                }
            }
            do {
                try pollSet.poll(timeoutMilliseconds: timeout)
            } catch {
                // Only EFAULT/ETERM/ENOTSOCK are possible, all bugs; don't spin on them.
                Self.pause()
            }
            if pollSet.isReadable(0) { wake.drain() }
            now = ContinuousClock.now
            for (index, attachment) in polled.enumerated() {
                if pollSet.isReadable(index + 1) { attachment.socketReadable(now: now) }
                if pollSet.isWritable(index + 1) { attachment.socketWritable(now: now) }
            }
            now = ContinuousClock.now
            for attachment in attachments {
                if let wakeup = attachment.nextWakeup(), wakeup <= now { attachment.timerFired(now: now) }
            }
        }
        finish()
    }

    /// Closes every attachment and drops queued work. Runs on the loop thread as it ends, or on
    /// the stopping thread for a loop that never started.
    func finish() {
        let queued = inbox.withLock { inbox -> [@Sendable () -> Void] in
            inbox.closed = true
            defer { inbox.work.removeAll() }
            return inbox.work
        }
        // What was asked before the stop still happens: an attachment queued just before (a
        // client closed before the thread first ran) joins here so that it leaves below, closing
        // its socket and its monitor in order. Work these queue is refused (the inbox is closed).
        for item in queued { item() }
        let leaving = attachments
        attachments.removeAll()
        polled.removeAll()
        for attachment in leaving { attachment.detached() }
    }

    private static func milliseconds(until instant: ContinuousClock.Instant, from now: ContinuousClock.Instant) -> Int {
        let remaining = now.duration(to: instant)
        if remaining <= .zero { return 0 }
        let (seconds, attoseconds) = remaining.components
        // Round up: waking a little early would only poll again with a zero timeout.
        let millis = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int(min(millis, 3_600_000))
    }

    private static func merge(_ a: Int, _ b: Int) -> Int {
        a < 0 ? b : min(a, b)
    }

    private static func pause() {
        var interval = timespec(tv_sec: 0, tv_nsec: 10_000_000)
        nanosleep(&interval, nil)
    }
}

extension LoopEngine {
    /// Runs `work` on the loop thread and returns when it (and all work queued before it) has
    /// run; at once if the loop has stopped.
    func barrier(_ work: @escaping @Sendable () -> Void = {}) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let queued = enqueue {
                work()
                continuation.resume()
            }
            if !queued { continuation.resume() }
        }
    }
}
