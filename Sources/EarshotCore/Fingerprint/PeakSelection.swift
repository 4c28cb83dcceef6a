/// Chooses the peaks that landmarks are made from, by two rankings: a peak is kept if either
/// keeps it.
///
/// - **Strongest overall.** Broadband noise in a room drowns weak peaks first, so the loudest
///   peaks are the ones a noisy room leaves.
/// - **Strongest of its band** (250–630 Hz, 630 Hz–1.6 kHz, 1.6–4 kHz). A louder foreground
///   (other music, a voice) takes the loudest places, but rarely in every band at once; and a
///   quiet band keeps some peaks when a loud one would have taken them all.
///
/// Each ranking counts the stronger peaks within ±window/2 of the peak. The window slides with
/// each peak, so the choice does not depend on where a query happens to start. References keep
/// few peaks (a small catalog); queries keep more, so the reference's peaks are among them even
/// when noise reorders the ranking. Selecting again from a selection keeps every peak: a kept
/// peak only loses rivals.
///
/// The reference rule, 8 per second plus 5 per band with two targets per anchor, finds more than
/// the strongest 10 per second alone and than 7 + 4 with three targets, each at the catalog's size
/// budget (benchmarks/studies/peak-selection-per-band.md).
public enum PeakSelection {
    /// How many peaks a ranking keeps, per second of audio.
    public struct Rule: Sendable, Equatable {
        /// Kept among all peaks.
        public var perSecond: Double
        /// Kept among the peaks of each band.
        public var perBandPerSecond: Double

        public init(perSecond: Double, perBandPerSecond: Double) {
            self.perSecond = perSecond
            self.perBandPerSecond = perBandPerSecond
        }
    }

    /// References: about 16 peaks per second of music kept, each the anchor of two landmarks
    /// (`LandmarkHasher.referenceFanOut`): 0.98 MB of catalog per hour.
    public static let reference = Rule(perSecond: 8, perBandPerSecond: 5)
    /// Queries.
    public static let query = Rule(perSecond: 20, perBandPerSecond: 8)
    /// Width of the ranking window, in seconds.
    public static let window = 1.0
    /// First bins of the upper bands: 625 Hz and 1.59 kHz (bins of 15.6 Hz).
    static let bandStarts: (Float, Float) = (40, 102)

    @inline(__always)
    static func band(ofBin bin: Float) -> Int {
        bin < bandStarts.0 ? 0 : (bin < bandStarts.1 ? 1 : 2)
    }

    /// The selected peaks of `peaks` (time-ordered), appended to `output` in time order.
    public static func select(_ peaks: UnsafeBufferPointer<Peak>, _ rule: Rule, into output: inout [Peak]) {
        let halfWindow = Float(window / 2 / FingerprintParameters.hopDuration)
        let allowed = Int((rule.perSecond * window).rounded())
        let allowedInBand = Int((rule.perBandPerSecond * window).rounded())
        var lo = 0, hi = 0
        for i in 0..<peaks.count {
            let p = peaks[i]
            while peaks[lo].time < p.time - halfWindow { lo += 1 }
            while hi < peaks.count, peaks[hi].time <= p.time + halfWindow { hi += 1 }
            let band = Self.band(ofBin: p.bin)
            var stronger = 0, strongerInBand = 0
            for j in lo..<hi where j != i {
                let q = peaks[j]
                // Ties go to the earlier peak, so equal magnitudes never keep both or neither.
                if q.magnitude > p.magnitude || (q.magnitude == p.magnitude && j < i) {
                    stronger += 1
                    if Self.band(ofBin: q.bin) == band { strongerInBand += 1 }
                    if stronger >= allowed && strongerInBand >= allowedInBand { break }
                }
            }
            if stronger < allowed || strongerInBand < allowedInBand { output.append(p) }
        }
    }

    /// Convenience returning a new array.
    public static func select(_ peaks: [Peak], _ rule: Rule) -> [Peak] {
        var out: [Peak] = []
        peaks.withUnsafeBufferPointer { select($0, rule, into: &out) }
        return out
    }
}
