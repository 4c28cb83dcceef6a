import EarshotAudio
import EarshotCore

/// Audio at any rate in, the fingerprint of the last seconds out: the audio pipeline feeding a
/// rolling window. Sessions make one per stream (and a fresh one after a break in the audio).
typealias PrerecordingWindow = AudioPipeline<RollingFingerprint>

extension AudioPipeline where Sink == RollingFingerprint {
    /// A window of `seconds` fed with audio at `inputRate` Hz.
    convenience init(inputRate: Double, windowSeconds seconds: Double) throws(EarshotError) {
        try self.init(inputRate: inputRate, sink: RollingFingerprint(capacity: seconds))
    }

    /// The rolling fingerprint.
    var window: RollingFingerprint { sink }

    /// Seconds of audio heard since the stream began (at the analysis side of the resampler).
    var streamDuration: Double { sink.streamDuration }
}
