import EarshotCore

/// Something a live session pulls mono float samples from: a capture device or a file.
///
/// The consumer side is one thread or task: after `start()` it loops on
/// `waitForSamples(timeout:)` and `read(into:)`, resamples from `sampleRate` to 16 kHz and
/// fingerprints. `state` and `statistics` may be read from anywhere; `stop()` may be called
/// from anywhere and makes a waiting consumer return.
///
/// Samples are only ever lost at the source (a device overrun, a consumer too slow for the
/// source's buffer, a device reopened after a failure), never reordered. A consumer that needs
/// contiguous audio compares `statistics` between reads: when `gaps` has grown, samples are
/// missing somewhere between the two reads.
///
/// A source that fails (`.failed`) may recover by itself: a consumer keeps calling
/// `waitForSamples(timeout:)` and `read(into:)` until it stops the source, because a source
/// without a thread of its own (a paced file) checks and retries from inside those calls.
public protocol AudioSource: AnyObject, Sendable {
    /// The rate of the samples `read(into:)` delivers, in Hz; nil until known (a capture device
    /// tells it when it first opens). Once known it does not change.
    var sampleRate: Double? { get }
    /// Where the source is in its life; see `AudioSourceState`.
    var state: AudioSourceState { get }
    /// Counters since `start()`.
    var statistics: AudioSourceStatistics { get }

    /// Begins delivering. Failures show in `state`, not as an error here. Calling it again has
    /// no effect.
    func start()
    /// Stops delivering and releases the device or file; returns once it has. Samples already
    /// delivered can still be read. A stopped source cannot be started again.
    func stop()

    /// Moves up to `buffer.count` samples into `buffer`; returns how many, 0 when none are
    /// ready. Never blocks.
    func read(into buffer: UnsafeMutableBufferPointer<Float>) -> Int
    /// Blocks until samples are ready to read, the state changes, or `timeout` seconds pass;
    /// returns whether samples are ready. May return early; callers loop.
    func waitForSamples(timeout: Double) -> Bool
}

/// The life of an `AudioSource`.
public enum AudioSourceState: Equatable, Sendable, CustomStringConvertible {
    /// Not started yet.
    case idle
    /// Opening the device or file for the first time.
    case starting
    /// Delivering samples.
    case running
    /// Failed for the given reason. A capture device or a paced file is retried after a growing
    /// pause (a device shows `retrying` while it reopens); for a `FileAudioSource` this is final.
    case failed(EarshotError)
    /// Reopening a capture device after a failure.
    case retrying
    /// A file source has delivered its whole file; samples not yet read can still be read.
    case finished
    /// `stop()` was called.
    case stopped

    public var description: String {
        switch self {
        case .idle: "idle"
        case .starting: "starting"
        case .running: "running"
        case .failed(let error): "failed: \(error.message)"
        case .retrying: "retrying"
        case .finished: "finished"
        case .stopped: "stopped"
        }
    }
}

/// Counters of an `AudioSource`, readable at any time.
public struct AudioSourceStatistics: Equatable, Sendable {
    /// Frames taken from the device or file (before mixing to mono).
    public var framesCaptured: Int
    /// Device overruns (and suspends) recovered from.
    public var xruns: Int
    /// Samples dropped because the consumer did not read them in time.
    public var droppedSamples: Int
    /// Times the device or file was opened again after a failure or a change (successful or not).
    public var reopenAttempts: Int
    /// Events after which samples are missing from the stream: overruns, runs of dropped
    /// samples and reopens of the device or file. Grows by at least one per gap.
    public var gaps: Int
    /// Times the audio started over from other content, as the source knows: a file that
    /// looped or was replaced. What follows does not continue what came before.
    public var restarts: Int

    public init(framesCaptured: Int = 0, xruns: Int = 0, droppedSamples: Int = 0, reopenAttempts: Int = 0, gaps: Int = 0,
                restarts: Int = 0) {
        self.restarts = restarts
        self.framesCaptured = framesCaptured
        self.xruns = xruns
        self.droppedSamples = droppedSamples
        self.reopenAttempts = reopenAttempts
        self.gaps = gaps
    }
}
