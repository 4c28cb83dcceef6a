import EarshotAudio
import EarshotCore

/// Matches a continuous stream of audio the caller supplies (`SHSession.matchStreamingBuffer`).
///
/// Buffers are fingerprinted as they arrive into a rolling window of the catalog's maximum query
/// duration. Once the window holds the minimum query duration, the window is matched every
/// `attemptInterval` seconds of audio, and `results` delivers each match (repeats of the current
/// item marked), one `.noMatch` when a match is lost or nothing matched yet, and every error.
///
/// A session is used from one thread or task at a time.
public final class Session {
    public let matcher: Matcher
    /// Seconds of audio between match attempts.
    public let attemptInterval: Double
    /// Delivers what the attempts find; ends when `finish()` is called.
    public let results: AsyncStream<StreamingResult>

    private let continuation: AsyncStream<StreamingResult>.Continuation
    private let windowSeconds: Double
    private var format: AudioFormat?
    private var fingerprinter: PrerecordingWindow?
    private var tracker = MatchTracker()
    private var continuity = AudioContinuity()
    private var lastAttempt = -Double.infinity

    public init(catalog: MappedCatalog, attemptInterval: Double = 1) {
        matcher = Matcher(catalog: catalog)
        self.attemptInterval = attemptInterval
        windowSeconds = catalog.maximumQuerySignatureDuration
        (results, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(64))
    }

    deinit { continuation.finish() }

    /// Matches one signature (`SHSession.match`).
    public func match(_ signature: Signature) -> MatchResult {
        matcher.match(signature)
    }

    /// The item being followed and where it is now, `streamTime` seconds into the stream.
    public var currentMatch: (item: MatchedMediaItem, streamTime: Double)? { tracker.currentMatch }

    /// Seconds of audio received since the stream (re)started.
    public var streamDuration: Double { fingerprinter?.streamDuration ?? 0 }

    /// Adds a buffer of the stream. `time` is the audio-clock time of its first sample; a gap or
    /// overlap against the previous buffer delivers `audioDiscontinuity` and restarts the window,
    /// since audio on both sides of a gap does not line up with any reference. A buffer whose
    /// format differs from the first delivers `invalidAudioFormat` and is dropped.
    public func matchStreamingBuffer(_ buffer: PCMBuffer, at time: Double? = nil) {
        if let format, format != buffer.format {
            deliver(.error(.invalidAudioFormat("buffer format \(buffer.format) differs from the stream's \(format)")))
            return
        }
        if let gap = continuity.take(time: time, frames: buffer.frameCount, rate: buffer.format.sampleRate) {
            deliver(.error(.audioDiscontinuity(gap.description + "; matching restarts from this buffer")))
            restart()
        }
        do {
            if fingerprinter == nil {
                try buffer.format.validate()
                fingerprinter = try PrerecordingWindow(inputRate: buffer.format.sampleRate, windowSeconds: windowSeconds)
                format = buffer.format
            }
            try fingerprinter!.append(buffer)
        } catch {
            deliver(.error(error))
            return
        }
        attemptIfDue()
    }

    /// Ends `results`.
    public func finish() {
        continuation.finish()
    }

    private func attemptIfDue() {
        guard let fingerprinter else { return }
        let window = fingerprinter.window
        let now = window.streamDuration
        guard window.windowDuration + 0.001 >= matcher.catalog.minimumQuerySignatureDuration,
            now - lastAttempt >= attemptInterval
        else { return }
        lastAttempt = now
        let result: MatchResult
        do {
            result = matcher.match(try window.signature().signature)
        } catch .signatureInvalid {
            result = .noMatch  // silence: nothing to match, not a failure of the stream
        } catch {
            result = .error(error)
        }
        deliver(result, at: now)
    }

    private func deliver(_ result: MatchResult, at streamTime: Double? = nil) {
        if let delivered = tracker.track(result, streamTime: streamTime ?? streamDuration) {
            continuation.yield(delivered)
        }
    }

    private func restart() {
        if let format {
            fingerprinter = try? PrerecordingWindow(inputRate: format.sampleRate, windowSeconds: windowSeconds)
        }
        tracker.reset()
        lastAttempt = -.infinity
    }
}
