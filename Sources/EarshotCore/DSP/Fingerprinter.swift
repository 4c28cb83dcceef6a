/// Streams mono audio at `FingerprintParameters.sampleRate` into spectral peaks.
///
/// This is the whole front end: window, FFT, power, peak picking. It owns its FFT plan and
/// buffers; after construction, `append` allocates only when the caller's peak array grows.
public final class Fingerprinter {
    private let analyzer = SpectralAnalyzer()
    private var picker = PeakPicker()
    /// Peaks found so far, in time order.
    public private(set) var peaks: [Peak] = []
    /// Samples consumed so far.
    public private(set) var sampleCount = 0

    public init() {}

    /// Audio seen so far, in seconds.
    public var duration: Double { Double(sampleCount) / FingerprintParameters.sampleRate }

    /// Feeds mono samples at the analysis rate.
    public func append(_ samples: UnsafeBufferPointer<Float>) {
        sampleCount += samples.count
        analyzer.process(samples) { spectrum in
            picker.add(spectrum: spectrum, peaks: &peaks)
        }
    }

    /// Convenience for arrays.
    public func append(_ samples: [Float]) {
        samples.withUnsafeBufferPointer { append($0) }
    }

    /// Every peak so far, deciding the last frames as if the audio ended now, without ending the
    /// stream: appending can go on afterwards.
    public func currentPeaks() -> [Peak] {
        var copy = picker
        var result = peaks
        copy.finish(peaks: &result)
        return result
    }

    /// Decides the last frames and returns every peak, in time order.
    public func finish() -> [Peak] {
        picker.finish(peaks: &peaks)
        return peaks
    }
}
