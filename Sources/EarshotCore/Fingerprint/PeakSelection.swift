/// Chooses the peaks that landmarks are made from: the strongest ones.
///
/// Broadband noise in a room drowns weak peaks first, so a peak is kept only if it is among the
/// `perSecond × window` strongest peaks within ±window/2 of it. The window slides with each peak,
/// so the choice does not depend on where a query happens to start. References keep few peaks
/// (a small catalog); queries keep more, so the reference's strongest peaks are among them even
/// when noise reorders the ranking.
public enum PeakSelection {
    /// Peaks per second kept for references.
    public static let referencePeaksPerSecond = 10.0
    /// Peaks per second kept for queries.
    public static let queryPeaksPerSecond = 20.0
    /// Width of the ranking window, in seconds.
    public static let window = 1.0

    /// The selected peaks of `peaks` (time-ordered), appended to `output` in time order.
    public static func strongest(_ peaks: UnsafeBufferPointer<Peak>, perSecond: Double, into output: inout [Peak]) {
        let halfWindow = Float(window / 2 / FingerprintParameters.hopDuration)
        let allowed = Int((perSecond * window).rounded())
        var lo = 0, hi = 0
        for i in 0..<peaks.count {
            let p = peaks[i]
            while peaks[lo].time < p.time - halfWindow { lo += 1 }
            while hi < peaks.count, peaks[hi].time <= p.time + halfWindow { hi += 1 }
            var stronger = 0
            for j in lo..<hi where j != i {
                let q = peaks[j]
                // Ties go to the earlier peak, so equal magnitudes never keep both or neither.
                if q.magnitude > p.magnitude || (q.magnitude == p.magnitude && j < i) {
                    stronger += 1
                    if stronger >= allowed { break }
                }
            }
            if stronger < allowed { output.append(p) }
        }
    }

    /// Convenience returning a new array.
    public static func strongest(_ peaks: [Peak], perSecond: Double) -> [Peak] {
        var out: [Peak] = []
        peaks.withUnsafeBufferPointer { strongest($0, perSecond: perSecond, into: &out) }
        return out
    }
}
