import EarshotCore
import EarshotSync

/// An audio file as an `AudioSource` that behaves like a sound card playing it: samples become
/// readable as wall-clock time passes, for demos and latency measurements.
///
/// The file is mixed to mono at its own rate and released a block at a time (`blockDuration`,
/// 20 ms like a capture period), measured from `start()` on the monotonic clock. Nothing runs in
/// the background: a read decodes what has come due since the last one. A consumer more than
/// `bufferDuration` behind loses the oldest audio, counted in `droppedSamples` and `gaps`, as
/// it would with a device. With `loop`, the file starts over at its end and plays until
/// stopped; otherwise the state becomes `.finished` when a read finds the whole file consumed.
///
/// The file can go away while it plays, as a sound card can be unplugged. The source follows the
/// path, not the file it opened (which would play on from a deleted or overwritten inode): every
/// `changeCheckInterval` a read compares the two (`FileIdentity`), and a file that was deleted,
/// replaced, truncated or rewritten in place is opened again and played from its start. A file
/// that cannot be opened (gone, empty, not audio, another sample rate) or turns out corrupt puts
/// the source in `.failed(reason)`; it is tried again after `retryDelays.lowerBound`, then after
/// pauses that double up to `retryDelays.upperBound`, until it plays again or `stop()` is called.
/// These checks and retries also happen inside `read(into:)` and `waitForSamples(timeout:)`,
/// which a consumer keeps calling while the source has failed, as it would for a device.
public final class PacedFileAudioSource: AudioSource {
    /// The file's path.
    public let path: String
    /// Whether the file starts over at its end.
    public let loops: Bool
    /// The shortest and longest pause before opening a failed file again; nil: a failure is final.
    public let retryDelays: ClosedRange<Double>?

    /// A quarter of a second, doubling to five: a file put back is playing again within
    /// seconds, and a file that stays away costs one failed open every five seconds.
    public static let defaultRetryDelays = 0.25...5.0
    /// How often a playing file is compared with what its path names (one `stat` call).
    static let changeCheckInterval = 0.25

    /// The pacing, fixed by the file's rate when it is first opened.
    private struct Timing {
        let rate: Double
        let blockFrames: Int
        /// Samples kept for a consumer that falls behind.
        let capacity: Int
    }

    private struct Inner {
        var stream: MonoFileStream?
        var state = AudioSourceState.idle
        var statistics = AudioSourceStatistics()
        var timing: Timing?
        /// When the current run (since `start()` or the last opening of the file) began, and
        /// samples handed out or dropped in it.
        var runStart = 0.0
        var consumed = 0
        /// Frames decoded from earlier openings of the file (passes of a loop, reopens).
        var framesOfEarlierOpenings = 0
        /// Whether the file was ever opened, and whether it ever played.
        var opened = false
        var played = false
        /// When to compare the file with its path next (while running), or to try opening it
        /// again (while failed), and the pause after that attempt should it fail too.
        var nextCheck = 0.0
        var nextRetry = Double.infinity
        var retryDelay = 0.0
    }
    private let inner: Locked<Inner>
    private let blockDuration: Double
    private let bufferDuration: Double
    private let clock: @Sendable () -> Double
    /// Lets `stop()` cut a consumer's wait short.
    private let wake = WakeSignal()

    /// Opens `path` now. Throws `invalidAudioFormat` as `AudioFileReader` does.
    ///
    /// - Parameters:
    ///   - loop: start the file over at its end, until stopped.
    ///   - blockDuration: seconds of audio released at a time.
    ///   - bufferDuration: seconds of audio kept for a consumer that falls behind.
    ///   - retryDelays: pauses before opening a failed file again; nil makes a failure final.
    public convenience init(
        path: String, loop: Bool = false, blockDuration: Double = 0.02, bufferDuration: Double = 4,
        retryDelays: ClosedRange<Double>? = PacedFileAudioSource.defaultRetryDelays
    ) throws(EarshotError) {
        try self.init(
            path: path, loop: loop, blockDuration: blockDuration, bufferDuration: bufferDuration,
            retryDelays: retryDelays, clock: { MonotonicClock.now() })
    }

    /// Does not open `path` until `start()`: a file that is missing or unreadable then is a
    /// failure like any later one, shown in `state` and retried. For an owner that must not give
    /// up on a file that is not there yet (a daemon started before its programme file is back).
    /// `sampleRate` is nil until the file first opens.
    public convenience init(
        openingAtStart path: String, loop: Bool = false, blockDuration: Double = 0.02, bufferDuration: Double = 4,
        retryDelays: ClosedRange<Double>? = PacedFileAudioSource.defaultRetryDelays
    ) {
        self.init(
            path: path, loop: loop, blockDuration: blockDuration, bufferDuration: bufferDuration,
            retryDelays: retryDelays, stream: nil, clock: { MonotonicClock.now() })
    }

    /// Opens `path` now, with the clock replaceable, for tests.
    convenience init(
        path: String, loop: Bool, blockDuration: Double, bufferDuration: Double,
        retryDelays: ClosedRange<Double>? = PacedFileAudioSource.defaultRetryDelays, clock: @escaping @Sendable () -> Double
    ) throws(EarshotError) {
        let stream = try MonoFileStream(path: path)
        self.init(
            path: path, loop: loop, blockDuration: blockDuration, bufferDuration: bufferDuration,
            retryDelays: retryDelays, stream: stream, clock: clock)
    }

    /// With the file already open, or nil to open it at `start()`.
    init(
        path: String, loop: Bool, blockDuration: Double, bufferDuration: Double, retryDelays: ClosedRange<Double>?,
        stream: MonoFileStream?, clock: @escaping @Sendable () -> Double
    ) {
        self.path = path
        loops = loop
        self.retryDelays = retryDelays.map { max(0.001, $0.lowerBound)...max(0.001, $0.upperBound) }
        self.blockDuration = max(blockDuration, 0.001)
        self.bufferDuration = max(bufferDuration, 0.01)
        self.clock = clock
        var initial = Inner(stream: stream)
        if let stream {
            initial.timing = Self.timing(rate: stream.sampleRate, blockDuration: self.blockDuration,
                                         bufferDuration: self.bufferDuration)
            initial.opened = true
        }
        inner = Locked(initial)
    }

    public var sampleRate: Double? { inner.withLock { $0.timing?.rate } }
    public var state: AudioSourceState { inner.withLock { $0.state } }
    public var statistics: AudioSourceStatistics { inner.withLock { $0.statistics } }

    public func start() {
        let now = clock()
        inner.withLock { s in
            guard case .idle = s.state else { return }
            if s.stream != nil {
                beginRun(at: now, &s)
            } else {
                open(at: now, &s)
            }
        }
        wake.notify()
    }

    public func stop() {
        inner.withLock { s in
            close(&s)
            s.state = .stopped
        }
        wake.notify()
    }

    public func read(into buffer: UnsafeMutableBufferPointer<Float>) -> Int {
        let now = clock()
        return inner.withLock { s in
            followPath(at: now, &s)
            guard case .running = s.state, s.stream != nil, let timing = s.timing else { return 0 }
            var due = due(at: now, in: s, timing) - s.consumed
            if due > timing.capacity {
                // The consumer fell behind further than a device's buffer reaches: skip ahead.
                let skip = due - timing.capacity
                let skipped = take(skip, into: nil, at: now, &s)
                s.consumed += skipped
                s.statistics.droppedSamples += skipped
                s.statistics.gaps += 1
                due -= skipped
            }
            let count = take(min(due, buffer.count), into: buffer, at: now, &s)
            s.consumed += count
            return count
        }
    }

    public func waitForSamples(timeout: Double) -> Bool {
        let start = clock()
        let deadline = start + max(0, timeout)
        while true {
            let now = clock()
            let (ready, wakeAt, waiting) = inner.withLock { s -> (Bool, Double, Bool) in
                followPath(at: now, &s)
                switch s.state {
                case .running:
                    guard let timing = s.timing else { return (false, 0, false) }
                    let ready = due(at: now, in: s, timing) > s.consumed
                    let blocksDue = (s.consumed / timing.blockFrames) + 1
                    return (ready, s.runStart + Double(blocksDue * timing.blockFrames) / timing.rate, true)
                case .failed where s.nextRetry.isFinite:
                    return (false, s.nextRetry, true)
                default:
                    return (false, 0, false)
                }
            }
            if ready || !waiting || now >= deadline { return ready }
            let sleep = min(deadline, wakeAt) - now
            _ = wake.wait(timeout: max(sleep, 0.0005)) { self.state == .stopped }
        }
    }

    // MARK: Opening and following the path

    private static func timing(rate: Double, blockDuration: Double, bufferDuration: Double) -> Timing {
        let blockFrames = max(1, Int((blockDuration * rate).rounded()))
        return Timing(rate: rate, blockFrames: blockFrames, capacity: max(blockFrames, Int((bufferDuration * rate).rounded())))
    }

    /// Starts releasing audio from the start of the open file, paced from `now`.
    private func beginRun(at now: Double, _ s: inout Inner) {
        s.state = .running
        s.runStart = now
        s.consumed = 0
        s.nextCheck = now + Self.changeCheckInterval
        s.nextRetry = .infinity
        s.retryDelay = retryDelays?.lowerBound ?? 0
    }

    /// Closes the file, keeping count of the frames it gave.
    private func close(_ s: inout Inner) {
        if let stream = s.stream { s.framesOfEarlierOpenings += stream.framesDecoded }
        s.stream = nil
    }

    /// Opens the file as the path names it now and plays it from its start; on failure,
    /// records why and when to try again.
    private func open(at now: Double, _ s: inout Inner) {
        close(&s)
        if s.opened { s.statistics.reopenAttempts += 1 }
        s.opened = true
        do throws(EarshotError) {
            let stream = try MonoFileStream(path: path, requiredSampleRate: s.timing?.rate)
            if s.timing == nil {
                s.timing = Self.timing(rate: stream.sampleRate, blockDuration: blockDuration, bufferDuration: bufferDuration)
            }
            // Audio jumps to the start of the file: the stream has a gap, as after a device reopen.
            if s.played {
                s.statistics.gaps += 1
                s.statistics.restarts += 1
            }
            s.stream = stream
            beginRun(at: now, &s)
        } catch {
            fail(error, at: now, &s)
        }
    }

    /// Puts the source in `.failed(error)` and schedules the next attempt to open the file.
    private func fail(_ error: EarshotError, at now: Double, _ s: inout Inner) {
        close(&s)
        s.state = .failed(error)
        guard let retryDelays else {
            s.nextRetry = .infinity
            return
        }
        let pause = min(max(s.retryDelay, retryDelays.lowerBound), retryDelays.upperBound)
        s.nextRetry = now + pause
        s.retryDelay = min(pause * 2, retryDelays.upperBound)
    }

    /// While playing, opens the file again if the path names another version of it now; while
    /// failed, tries to open it when the pause is over.
    private func followPath(at now: Double, _ s: inout Inner) {
        switch s.state {
        case .running:
            guard now >= s.nextCheck, let stream = s.stream else { return }
            s.nextCheck = now + Self.changeCheckInterval
            if stream.fileChanged { open(at: now, &s) }
        case .failed:
            if now >= s.nextRetry { open(at: now, &s) }
        default:
            break
        }
    }

    // MARK: Pacing

    /// Samples due in the current run at time `now`: whole blocks only, as a device delivers them.
    private func due(at now: Double, in s: Inner, _ timing: Timing) -> Int {
        let elapsed = max(0, now - s.runStart)
        // A nanosecond of slack, so that a block due at exactly `now` is not lost to rounding.
        return Int(((elapsed + 1e-9) * timing.rate) / Double(timing.blockFrames)) * timing.blockFrames
    }

    /// Takes up to `count` samples from the file into `buffer` (or discards them), starting the
    /// file over at its end when looping; ends in `.finished` at the end otherwise, and in
    /// `.failed` when the file cannot be read or opened again.
    private func take(_ count: Int, into buffer: UnsafeMutableBufferPointer<Float>?, at now: Double, _ s: inout Inner) -> Int {
        var taken = 0
        while taken < count, let stream = s.stream {
            do throws(EarshotError) {
                let got: Int
                if let buffer {
                    got = try stream.read(into: UnsafeMutableBufferPointer(rebasing: buffer[taken..<count]))
                } else {
                    got = try stream.skip(count - taken)
                }
                taken += got
                if got > 0 { s.played = true }
                s.statistics.framesCaptured = s.framesOfEarlierOpenings + stream.framesDecoded
                guard got == 0 else { continue }
                guard loops else {
                    close(&s)
                    s.state = .finished
                    break
                }
                guard stream.framesDecoded > 0 else {
                    throw .invalidAudioFormat("\(path): no audio could be read from the file")
                }
                // The next pass, from the file as the path names it now: the audio starts over.
                close(&s)
                s.stream = try MonoFileStream(path: path, requiredSampleRate: s.timing?.rate)
                s.statistics.restarts += 1
            } catch {
                fail(error, at: now, &s)
            }
        }
        return taken
    }
}
