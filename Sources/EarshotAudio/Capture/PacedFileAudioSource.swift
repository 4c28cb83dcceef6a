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
public final class PacedFileAudioSource: AudioSource {
    /// The file's path.
    public let path: String
    /// Whether the file starts over at its end.
    public let loops: Bool

    private struct Inner {
        var stream: MonoFileStream?
        var state = AudioSourceState.idle
        var statistics = AudioSourceStatistics()
        var startTime = 0.0
        /// Samples handed out or dropped since `start()`.
        var consumed = 0
        /// Samples of earlier passes through the file (looping).
        var framesOfEarlierPasses = 0
    }
    private let inner: Locked<Inner>
    private let rate: Double
    private let blockFrames: Int
    private let capacity: Int
    private let clock: @Sendable () -> Double
    /// Lets `stop()` cut a consumer's wait short.
    private let wake = WakeSignal()

    /// Opens `path`. Throws `invalidAudioFormat` as `AudioFileReader` does.
    ///
    /// - Parameters:
    ///   - loop: start the file over at its end, until stopped.
    ///   - blockDuration: seconds of audio released at a time.
    ///   - bufferDuration: seconds of audio kept for a consumer that falls behind.
    public convenience init(
        path: String, loop: Bool = false, blockDuration: Double = 0.02, bufferDuration: Double = 4
    ) throws(EarshotError) {
        try self.init(
            path: path, loop: loop, blockDuration: blockDuration, bufferDuration: bufferDuration,
            clock: { MonotonicClock.now() })
    }

    /// With the clock replaceable, for tests.
    init(
        path: String, loop: Bool, blockDuration: Double, bufferDuration: Double, clock: @escaping @Sendable () -> Double
    ) throws(EarshotError) {
        let stream = try MonoFileStream(path: path)
        self.path = path
        loops = loop
        rate = stream.sampleRate
        blockFrames = max(1, Int((max(blockDuration, 0.001) * rate).rounded()))
        capacity = max(blockFrames, Int((max(bufferDuration, 0.01) * rate).rounded()))
        self.clock = clock
        inner = Locked(Inner(stream: stream))
    }

    public var sampleRate: Double? { rate }
    public var state: AudioSourceState { inner.withLock { $0.state } }
    public var statistics: AudioSourceStatistics { inner.withLock { $0.statistics } }

    public func start() {
        let now = clock()
        inner.withLock { s in
            guard case .idle = s.state else { return }
            s.startTime = now
            s.state = .running
        }
    }

    public func stop() {
        inner.withLock { s in
            s.stream = nil
            s.state = .stopped
        }
        wake.notify()
    }

    public func read(into buffer: UnsafeMutableBufferPointer<Float>) -> Int {
        let now = clock()
        return inner.withLock { s in
            guard case .running = s.state, s.stream != nil else { return 0 }
            var due = due(at: now, in: s) - s.consumed
            if due > capacity {
                // The consumer fell behind further than a device's buffer reaches: skip ahead.
                let skip = due - capacity
                let skipped = take(skip, into: nil, &s)
                s.consumed += skipped
                s.statistics.droppedSamples += skipped
                s.statistics.gaps += 1
                due -= skipped
            }
            let count = take(min(due, buffer.count), into: buffer, &s)
            s.consumed += count
            return count
        }
    }

    public func waitForSamples(timeout: Double) -> Bool {
        let start = clock()
        let deadline = start + max(0, timeout)
        while true {
            let now = clock()
            let (ready, nextBlock, running) = inner.withLock { s -> (Bool, Double, Bool) in
                guard case .running = s.state else { return (false, 0, false) }
                let ready = due(at: now, in: s) > s.consumed
                let blocksDue = (s.consumed / blockFrames) + 1
                return (ready, s.startTime + Double(blocksDue * blockFrames) / rate, true)
            }
            if ready || !running || now >= deadline { return ready }
            let sleep = min(deadline, nextBlock) - now
            _ = wake.wait(timeout: max(sleep, 0.0005)) { self.state != .running }
        }
    }

    /// Samples due since `start()` at time `now`: whole blocks only, as a device delivers them.
    private func due(at now: Double, in s: Inner) -> Int {
        let elapsed = max(0, now - s.startTime)
        // A nanosecond of slack, so that a block due at exactly `now` is not lost to rounding.
        return Int(((elapsed + 1e-9) * rate) / Double(blockFrames)) * blockFrames
    }

    /// Takes up to `count` samples from the file into `buffer` (or discards them), starting
    /// the file over at its end when looping; ends in `.finished` or `.failed` otherwise.
    private func take(_ count: Int, into buffer: UnsafeMutableBufferPointer<Float>?, _ s: inout Inner) -> Int {
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
                s.statistics.framesCaptured = s.framesOfEarlierPasses + stream.framesDecoded
                if got == 0 {
                    guard loops, stream.framesDecoded > 0 else {
                        s.state = .finished
                        s.stream = nil
                        break
                    }
                    s.framesOfEarlierPasses += stream.framesDecoded
                    try stream.rewind()
                }
            } catch {
                s.state = .failed(error)
                s.stream = nil
            }
        }
        return taken
    }
}
