import FoundationEssentials

/// A compact, irreversible fingerprint of audio: the spectral peaks and the audio's duration.
///
/// The peaks hold no phase and no spectrum between them, so the audio cannot be rebuilt from a
/// signature. A signature serialises to a versioned, checksummed binary form (file `.earsig`).
public struct Signature: Sendable, Equatable {
    /// Duration of the audio the signature was made from, in seconds.
    public let duration: Double
    /// Spectral peaks in time order; times are frames from the start of the audio.
    public let peaks: [Peak]

    /// Builds a signature from peaks. Throws `signatureInvalid` if there are none (silence) or
    /// if they are out of order or outside the analysed band.
    public init(duration: Double, peaks: [Peak]) throws(EarshotError) {
        guard duration.isFinite, duration > 0 else {
            throw .signatureInvalid("duration \(duration) s is not positive")
        }
        guard !peaks.isEmpty else {
            throw .signatureInvalid("the audio holds no spectral peaks (silence or too quiet)")
        }
        for p in peaks {
            guard p.time.isFinite, p.time >= 0, p.time <= Float(1 << 28), p.magnitude.isFinite,
                p.bin.isFinite, p.bin >= Float(FingerprintParameters.minimumBin) - 1,
                p.bin <= Float(FingerprintParameters.maximumBin) + 0.5
            else { throw .signatureInvalid("peak \(p) is out of range") }
        }
        self.duration = duration
        // Interpolation can move a peak up to half a frame; keep strict time order for coding
        // and for the hasher's early exit.
        // Peaks are kept on the storage grid, so a signature equals its decoded `.earsig`.
        var sorted = peaks.map(PeakCoding.quantized)
        if zip(sorted, sorted.dropFirst()).contains(where: { $0.time > $1.time }) {
            sorted = sorted.enumerated().sorted { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }.map(\.element)
        }
        self.peaks = sorted
    }

    /// Peaks per second of audio.
    public var peakDensity: Double { Double(peaks.count) / duration }

    /// The part of the signature between `start` and `start + duration` seconds, with times made
    /// relative to `start` (for cutting long audio to a catalog's query limits).
    public func slice(from start: Double, duration length: Double) throws(EarshotError) -> Signature {
        guard start.isFinite, length.isFinite, start >= 0, length > 0, start < duration else {
            throw .signatureInvalid("cannot cut \(length.decimalText(places: 2)) s from \(start.decimalText(places: 2)) s out of a \(duration.decimalText(places: 2)) s signature")
        }
        let hop = FingerprintParameters.hopDuration
        let lo = Float(start / hop), hi = Float((start + length) / hop)
        let selected = peaks.filter { $0.time >= lo && $0.time < hi }.map {
            Peak(time: $0.time - lo, bin: $0.bin, magnitude: $0.magnitude)
        }
        return try Signature(duration: min(length, duration - start), peaks: selected)
    }
}
