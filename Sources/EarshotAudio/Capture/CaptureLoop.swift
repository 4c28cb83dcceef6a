import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// What the capture loop reads from: an opened `AlsaCapture`, or a stand-in in tests (so that
/// overruns and vanishing devices can be tested without hardware). The calls mirror alsa-lib's:
/// results are frame counts or negative `errno` codes.
protocol CaptureInput: AnyObject {
    var parameters: AlsaCaptureParameters { get }
    func start() -> Int32
    func read(into buffer: UnsafeMutableRawPointer, frames: Int) -> Int
    func wait(milliseconds: Int32) -> Int32
    func recover(_ error: Int32) -> Int32
}

/// Counters the capture loop bumps and anyone may read.
final class CaptureCounters: Sendable {
    let framesCaptured = Atomic<Int>(0)
    let xruns = Atomic<Int>(0)
    let stopRequested = Atomic<Bool>(false)
}

/// Why a capture loop returned.
enum CaptureLoopEnd: Equatable {
    case stopRequested
    /// The device returned an error that `snd_pcm_recover` does not handle (it vanished: `-ENODEV`,
    /// `-EIO`, `-EBADFD` …), or recovering from an overrun failed.
    case failed(code: Int32, recovering: Bool)
    /// The device delivered nothing for this many seconds (a stalled clock, a file PCM past its
    /// end on a newer alsa-lib).
    case stalled(seconds: Double)
}

/// The per-period work of the capture thread: read a period from the device, mix it to mono
/// floats, put it in the ring, wake the consumer.
///
/// `init` allocates the two period buffers; `run` then allocates nothing, takes no lock and
/// logs nothing: it reports through atomic counters and its return value, and the caller turns
/// those into messages after the loop has ended. (alsa-lib does lock the PCM's own mutex inside
/// each call, to make its API thread-safe; only this thread uses the PCM, so that lock is never
/// contended. Checked under gdb with breakpoints on the allocator: over hundreds of periods the
/// capture thread called `malloc` only while opening the device, never inside `run`.)
struct CaptureLoop: ~Copyable {
    let input: any CaptureInput
    private let format: AlsaSampleFormat
    private let channels: Int
    private let periodFrames: Int
    private let periodBytes: Int
    private let raw: UnsafeMutableRawPointer
    private let mono: UnsafeMutablePointer<Float>
    /// How long `snd_pcm_wait` may sleep before the loop looks at the stop flag again.
    private let waitMilliseconds: Int32
    private let stallNanoseconds: Int

    init(input: any CaptureInput, stallTimeout: Double) {
        self.input = input
        let p = input.parameters
        format = p.sampleFormat
        channels = p.channelCount
        periodFrames = p.periodFrames
        periodBytes = p.periodFrames * p.channelCount * p.sampleFormat.bytesPerSample
        raw = .allocate(byteCount: periodBytes, alignment: 16)
        mono = .allocate(capacity: p.periodFrames)
        // Two periods, at least 10 ms and at most 100 ms: a stop is noticed within 100 ms.
        waitMilliseconds = Int32(min(100, max(10, (2 * p.periodDuration * 1000).rounded(.up))))
        stallNanoseconds = Int(max(stallTimeout, 0.01) * 1e9)
    }

    deinit {
        raw.deallocate()
        mono.deallocate()
    }

    /// Captures until a stop is requested or the device fails.
    func run(into ring: SampleRing, counters: CaptureCounters, signal: WakeSignal) -> CaptureLoopEnd {
        let status = input.start()
        // A stream that is already running (-EBADFD after an implicit start) is fine.
        if status < 0 && status != -EBADFD {
            return .failed(code: status, recovering: false)
        }
        var lastData = Self.monotonicNanoseconds()
        while !counters.stopRequested.load(ordering: .relaxed) {
            // alsa-lib 1.2.8's file plugin leaves the buffer untouched past the end of its
            // infile (and on read errors of it) yet reports full periods; zeroing first makes
            // that silence rather than the previous period again. It costs one memset per period.
            raw.initializeMemory(as: UInt8.self, repeating: 0, count: periodBytes)
            var result = input.read(into: raw, frames: periodFrames)
            if result > 0 {
                let frames = min(result, periodFrames)
                format.mixToMono(UnsafeRawPointer(raw), frames: frames, channels: channels, into: mono)
                ring.write(UnsafeBufferPointer(start: mono, count: frames))
                counters.framesCaptured.add(frames, ordering: .relaxed)
                signal.notify()
                lastData = Self.monotonicNanoseconds()
                continue
            }
            if result == 0 || result == -Int(EAGAIN) {
                // Nothing ready: sleep until a period is, or the wait times out.
                let waited = input.wait(milliseconds: waitMilliseconds)
                if waited >= 0 {
                    if waited == 0 || result == 0 {
                        let quiet = Self.monotonicNanoseconds() - lastData
                        if quiet > stallNanoseconds { return .stalled(seconds: Double(quiet) / 1e9) }
                        // A device that says "ready" yet keeps returning nothing must not spin.
                        if result == 0 && waited > 0 { Self.sleep(milliseconds: Int(waitMilliseconds)) }
                    }
                    continue
                }
                result = Int(waited)
            }
            let code = Int32(truncatingIfNeeded: result)
            if code == -EPIPE || code == -ESTRPIPE || code == -EINTR {
                if code != -EINTR { counters.xruns.add(1, ordering: .relaxed) }
                let recovered = input.recover(code)
                if recovered < 0 { return .failed(code: recovered, recovering: true) }
                lastData = Self.monotonicNanoseconds()
                continue
            }
            return .failed(code: code, recovering: false)
        }
        return .stopRequested
    }

    private static func monotonicNanoseconds() -> Int {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return now.tv_sec * 1_000_000_000 + now.tv_nsec
    }

    private static func sleep(milliseconds: Int) {
        var interval = timespec(tv_sec: milliseconds / 1000, tv_nsec: (milliseconds % 1000) * 1_000_000)
        nanosleep(&interval, nil)
    }
}
