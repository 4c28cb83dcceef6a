import RealModule
import FoundationEssentials

/// Checks a candidate against the reference's own peaks, after the hash vote.
///
/// A landmark survives a room only if both of its peaks do, so in reverberation and noise a
/// right match can gather fewer aligned anchors than a match needs. The peaks that survived
/// alone still sit where the reference has peaks: mapped by the candidate (offset, time scale,
/// pitch), the query's peaks are compared with the reference peaks the catalog stores for the
/// span the query covers. Chance finds some too (a noisy query has peaks everywhere), as many
/// as the query's own peak density in each band predicts; the evidence is how far the count of
/// found reference peaks stands above that expectation. Music of the same key and instruments
/// finds more than the query's density predicts (its notes sit on the same bins), so a
/// confirmation also measures chance directly: the same query moved a few seconds along the same
/// reference (`chanceShifts`), where only that kind of likeness is left.
///
/// Pure and allocation-free: the reference peaks are read in place from the catalog.
public enum PeakVerification {
    /// A reference peak is found when a query peak lies this close to it (frames, bins): the
    /// peak picker places a peak to a fraction of a frame and bin; a room moves it by about a
    /// bin, and its echoes move a peak's time by more: 2.5 frames find more in rooms than 1.5,
    /// with chance no higher (benchmarks/studies/peak-verification.md).
    static let frameTolerance: Float = 2.5
    static let binTolerance: Float = 1.5

    public struct Result: Sendable, Equatable {
        /// Reference peaks in the span the query covers.
        public var referencePeaks: Int
        /// Of them, those with a query peak close by.
        public var found: Int
        /// How many would be found by chance, from the query's peak density.
        public var expected: Double

        /// Found beyond chance, in standard deviations (Poisson, with one count of slack so a
        /// tiny expectation does not make a handful of peaks look decisive), leaving out
        /// `explained` found peaks that other evidence already counted (the peaks of the
        /// landmarks the hash vote aligned are found by construction).
        public func score(explained: Int) -> Double {
            (Double(found - explained) - expected) / (expected + 1).squareRoot()
        }

        /// This result with the expectation raised to `rate` of its reference peaks (what the
        /// query finds at other places, `chanceAtShifts`), when that is more.
        public func withChance(atShifts rate: Double?) -> Result {
            var raised = self
            if let rate { raised.expected = max(expected, rate * Double(referencePeaks)) }
            return raised
        }
    }

    /// Compares `query` (a signature's peaks, time-ordered, query frames from 0 to
    /// `queryFrames`) with reference `reference` of `catalog`, where the query starts at
    /// `offset` seconds of the reference and runs `timeScale` reference seconds per second with
    /// its frequencies `pitch` × the reference's. `cursors` (`MappedCatalog.peakCursors` of the
    /// reference), when given, let the walk over the reference's peaks start near the span.
    public static func check(_ query: UnsafeBufferPointer<Peak>, queryFrames: Float, catalog: MappedCatalog,
                             reference: Int, offset: Double, timeScale: Double, pitch: Double,
                             cursors: [MappedCatalog.PeakCursor] = []) -> Result {
        let start = Float(offset / FingerprintParameters.hopDuration)
        let scale = Float(timeScale), binScale = Float(1 / pitch)
        // A span that is not one (a degenerate candidate) finds nothing rather than trapping.
        guard isSpan(start: start, scale: scale, binScale: binScale, queryFrames: queryFrames)
        else { return Result(referencePeaks: 0, found: 0, expected: 0) }
        // Chance: per band, the query's peaks per frame and bin, over the area one reference
        // peak's tolerance covers (the chance that at least one query peak falls in it).
        let firstBin = Float(FingerprintParameters.minimumBin), lastBin = Float(FingerprintParameters.maximumBin)
        let edges = PeakSelection.bandStarts
        let widths: (Float, Float, Float) = (edges.0 - firstBin, edges.1 - edges.0, lastBin - edges.1)
        var counts: (Float, Float, Float) = (0, 0, 0)
        for p in query {
            switch PeakSelection.band(ofBin: p.bin * binScale) {
            case 0: counts.0 += 1
            case 1: counts.1 += 1
            default: counts.2 += 1
            }
        }
        let area = (2 * frameTolerance) * (2 * binTolerance) / max(1, queryFrames * scale)
        let chance = (Double(1 - Float.exp(-counts.0 * area / widths.0)), Double(1 - Float.exp(-counts.1 * area / widths.1)),
                      Double(1 - Float.exp(-counts.2 * area / widths.2)))
        return walk(query, queryFrames: queryFrames, catalog: catalog, reference: reference, start: start, scale: scale,
                    binScale: binScale, cursors: cursors, chance: chance)
    }

    @inline(__always)
    private static func isSpan(start: Float, scale: Float, binScale: Float, queryFrames: Float) -> Bool {
        start.isFinite && scale.isFinite && scale > 0 && binScale.isFinite && binScale > 0 && queryFrames.isFinite && queryFrames >= 0
    }

    /// Walks the reference's peaks in the span the query covers from frame `start`, counting
    /// those with a query peak close by, and adding `chance` (per band) to the expectation.
    private static func walk(_ query: UnsafeBufferPointer<Peak>, queryFrames: Float, catalog: MappedCatalog, reference: Int,
                             start: Float, scale: Float, binScale: Float, cursors: [MappedCatalog.PeakCursor],
                             chance: (Double, Double, Double)) -> Result {
        var result = Result(referencePeaks: 0, found: 0, expected: 0)
        var lo = 0
        let cursor = MappedCatalog.cursor(in: cursors, before: start)
        catalog.forEachPeak(ofReference: reference, in: start...(start + queryFrames * scale), from: cursor) { time, bin in
            result.referencePeaks += 1
            switch PeakSelection.band(ofBin: bin) {
            case 0: result.expected += chance.0
            case 1: result.expected += chance.1
            default: result.expected += chance.2
            }
            // Query peaks are time-ordered and so are their mapped times: slide a window.
            while lo < query.count, start + query[lo].time * scale < time - frameTolerance { lo += 1 }
            var j = lo
            while j < query.count {
                let q = query[j]
                let t = start + q.time * scale
                if t > time + frameTolerance { break }
                if abs(q.bin * binScale - bin) <= binTolerance {
                    result.found += 1
                    break
                }
                j += 1
            }
        }
        return result
    }

    /// Seconds by which the query is moved along the reference to measure chance there: past
    /// a note's length, so the right place's own peaks are not found again, and within the
    /// passage, whose key and instruments stay. Whole seconds are whole beats at 60 and 120 BPM,
    /// so in looped music a shift can find the loop again: that raises chance for every place
    /// of the loop, the right one too, and what it costs the right place a repeat elsewhere
    /// costs as much: shifts of 1.13, 1.87 and 2.71 s find as many right places, but confirm more
    /// repeats of a loop and one more chance match (benchmarks/studies/confirmation-chance-at-shifts.md).
    public static let chanceShifts: [Double] = [-3, -2, -1, 1, 2, 3]

    /// The share of the reference's peaks the query finds when moved by each of `chanceShifts`
    /// from `offset`, over all shifts together (arguments as `check`); nil when no reference
    /// peak lies in those spans.
    public static func chanceAtShifts(_ query: UnsafeBufferPointer<Peak>, queryFrames: Float, catalog: MappedCatalog,
                                      reference: Int, offset: Double, timeScale: Double, pitch: Double,
                                      cursors: [MappedCatalog.PeakCursor] = []) -> Double? {
        let scale = Float(timeScale), binScale = Float(1 / pitch)
        let hop = FingerprintParameters.hopDuration
        guard isSpan(start: Float(offset / hop), scale: scale, binScale: binScale, queryFrames: queryFrames) else { return nil }
        var found = 0, peaks = 0
        for shift in chanceShifts {
            let moved = walk(query, queryFrames: queryFrames, catalog: catalog, reference: reference,
                             start: Float((offset + shift) / hop), scale: scale, binScale: binScale, cursors: cursors,
                             chance: (0, 0, 0))
            found += moved.found
            peaks += moved.referencePeaks
        }
        return peaks > 0 ? Double(found) / Double(peaks) : nil
    }
}
