import EarshotAudio
import EarshotCore

/// Mono audio at any rate in, a rolling fingerprint of the last seconds out.
///
/// Resamples to the analysis rate with soxr and feeds a `RollingFingerprint`. Its buffers are
/// reused, so after the first seconds an appended block causes no allocation.
final class StreamingFingerprinter {
    let inputRate: Double
    let window: RollingFingerprint
    private let resampler: Resampler
    private var converted: [Float] = []

    init(inputRate: Double, windowSeconds: Double) throws(EarshotError) {
        self.inputRate = inputRate
        window = RollingFingerprint(capacity: windowSeconds)
        resampler = try Resampler(inputRate: inputRate, outputRate: FingerprintParameters.sampleRate)
        converted.reserveCapacity(16_384)
    }

    /// Seconds of audio heard since the stream began (at the analysis side of the resampler).
    var streamDuration: Double { window.streamDuration }

    /// Appends mono samples at `inputRate`.
    func append(_ samples: UnsafeBufferPointer<Float>) {
        converted.removeAll(keepingCapacity: true)
        resampler.process(samples, into: &converted)
        converted.withUnsafeBufferPointer { window.append($0) }
    }
}
