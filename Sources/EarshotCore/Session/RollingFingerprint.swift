/// The fingerprint of the most recent seconds of an endless stream: the prerecording buffer.
///
/// Audio (mono, `FingerprintParameters.sampleRate`) is fingerprinted as it arrives, so a match
/// request only has to cut a signature from peaks that already exist. Peaks older than the
/// window are dropped and the time origin moves with them, so memory stays bounded and peak
/// times stay exact however long the stream runs. After the first seconds, appending does not
/// allocate.
public final class RollingFingerprint {
    /// Seconds of audio the window keeps.
    public let capacity: Double
    private let fingerprinter = Fingerprinter()
    private let hop = FingerprintParameters.hopDuration
    /// Peaks are dropped in steps of this many frames (about 2 s), not every buffer.
    private let trimStep = 256

    public init(capacity: Double) {
        precondition(capacity > 0, "a rolling window needs a positive capacity")
        self.capacity = capacity
        // Dense audio gives about 60 peaks per second; leave room for twice that plus a trim step.
        fingerprinter.reservePeakCapacity(Int((capacity + 4) * 120))
    }

    /// Seconds of audio appended since the stream began.
    public var streamDuration: Double { fingerprinter.duration }

    /// Seconds of audio a signature can cover now.
    public var windowDuration: Double { min(capacity, streamDuration) }

    /// Appends mono samples at the analysis rate.
    public func append(_ samples: UnsafeBufferPointer<Float>) {
        fingerprinter.append(samples)
        // Keep a frame radius of slack before the window so its first peaks are fully decided.
        let keepFrom = Int((streamDuration - capacity) / hop) - 2 * FingerprintParameters.peakFrameRadius
        let excess = keepFrom - fingerprinter.frameOrigin
        if excess >= trimStep { fingerprinter.rebase(by: excess) }
    }

    /// Convenience for arrays.
    public func append(_ samples: [Float]) {
        samples.withUnsafeBufferPointer { append($0) }
    }

    /// The signature of the last `seconds` of audio (at most the window), and the stream time of
    /// its first sample. Throws `signatureInvalid` when nothing was heard or the audio holds no
    /// peaks (silence).
    public func signature(lastSeconds seconds: Double? = nil) throws(EarshotError) -> (signature: Signature, streamStart: Double) {
        let length = min(seconds ?? capacity, windowDuration)
        guard length > 0 else { throw .signatureInvalid("no audio has been heard yet") }
        let end = streamDuration
        let start = end - length
        // Window start in the fingerprinter's frame coordinates.
        let startFrame = Float(start / hop - Double(fingerprinter.frameOrigin))
        // Interpolation moves a peak up to half a frame, so peaks near the start are not in time
        // order: every peak is checked, not only a leading run.
        var peaks = fingerprinter.currentPeaks()
        peaks.removeAll { $0.time < startFrame }
        for i in peaks.indices { peaks[i].time -= startFrame }
        let signature = try Signature(duration: length, peaks: peaks)
        return (signature, start)
    }
}
