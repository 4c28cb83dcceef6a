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

    /// Stream frame that peak time 0 refers to (0 until `rebase` moves it).
    public var frameOrigin: Int { picker.frameOrigin }

    /// Forgets the peaks of the `frames` frames after the current origin and moves the origin
    /// past them: kept and future peaks get times `frames` smaller. A rolling window calls this
    /// so a stream can run for months with bounded memory and exact peak times. Does not allocate.
    public func rebase(by frames: Int) {
        precondition(frames >= 0, "rebase moves the origin forward only")
        guard frames > 0 else { return }
        let cut = Float(frames)
        // Not only a leading run: interpolation leaves peaks up to half a frame out of order.
        peaks.removeAll { $0.time < cut }
        for i in peaks.indices { peaks[i].time -= cut }
        picker.frameOrigin += frames
    }

    /// Reserves room for `count` peaks, so appending does not allocate until they are exceeded.
    public func reservePeakCapacity(_ count: Int) {
        peaks.reserveCapacity(count)
    }

    /// Decides the last frames and returns every peak, in frame order (interpolated times may
    /// be up to half a frame out of order; `Signature` sorts them).
    public func finish() -> [Peak] {
        picker.finish(peaks: &peaks)
        return peaks
    }
}
