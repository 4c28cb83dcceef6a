/// Something the loop thread owns and drives: a socket it watches, and timers.
///
/// Every method is called on the loop thread only, so implementations keep their socket and
/// their per-call state there without locks.
protocol LoopAttachment: AnyObject, Sendable {
    /// The socket to watch for input; nil for one that only sends (PUB).
    var pollSocket: ZMQSocket? { get }
    /// Whether to also wake when the socket can take a message (a client holding messages it
    /// could not send before the connection was up).
    var wantsWritable: Bool { get }
    /// The socket has input. Handle a bounded batch and return; the loop comes back if more is
    /// waiting, so one busy socket cannot starve the others.
    func socketReadable(now: ContinuousClock.Instant)
    func socketWritable(now: ContinuousClock.Instant)
    /// When `timerFired` is next wanted; nil for never. Asked before every poll.
    func nextWakeup() -> ContinuousClock.Instant?
    func timerFired(now: ContinuousClock.Instant)
    /// The attachment leaves the loop (detached, or the loop stops): close the socket and fail
    /// whatever still waits on it.
    func detached()
}

extension LoopAttachment {
    var wantsWritable: Bool { false }
    func socketWritable(now: ContinuousClock.Instant) {}
}
