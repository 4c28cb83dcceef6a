/// Turns the busiest offset bins of the hits held (`HitCollector`) into candidates: each bin's
/// nearby hits are fitted with a line (query time → reference time, `LineFit`) whose inliers are
/// the evidence, whose slope is the speed and whose intercept is the offset; the ratio of query to
/// reference anchor frequencies gives the pitch.
final class CandidateFitter {
    private let catalog: SearchedCatalogs
    private let hits: HitCollector
    private let requiredInliers: Int
    /// `OffsetHistogram.margin` of the bins fitted.
    private let margin: Int
    /// Per offset bin being fitted: the offset (frames) at its centre and the indices of the hits
    /// near it (`gather`).
    private var nearCenters = [Int](repeating: 0, count: MatchThresholds.candidatesPerHypothesis)
    private var nearHits = [[Int32]](repeating: [], count: MatchThresholds.candidatesPerHypothesis)
    /// Indices of the bins `gather` was given, in order of their centres.
    private var binsByCenter: [Int] = []
    /// The bins within `drift` of a bin `gather` was given.
    private var nearBins: BinMarks
    // Scratch of `fit`.
    private var xs: [Double] = []
    private var ys: [Double] = []
    private var ratios: [Double] = []
    private var candidateHits: [Int] = []
    private var inlierFrames: [Int32] = []
    private var lineFit = LineFit()

    init(catalog: SearchedCatalogs, hits: HitCollector, histogram: OffsetHistogram, requiredInliers: Int) {
        self.catalog = catalog
        self.hits = hits
        self.requiredInliers = requiredInliers
        margin = histogram.margin
        nearBins = BinMarks(binCount: histogram.binCount)
    }

    /// How far (frames) a match's hits may lie from its offset bin's centre: a tempo drift over
    /// the query spreads them over several bins.
    private static func drift(queryFrames: Double) -> Int {
        Int(MatchThresholds.driftShare * queryFrames) + 2 * (1 << OffsetHistogram.binShift)
    }

    /// Sorts out, in one pass over the hits, those within `drift` of each of `bins`:
    /// `nearHits[k]` for `bins[k]`, whose centre offset is `nearCenters[k]`. A hit whose own bin
    /// is near none of them (most hits) is passed over at one look at `nearBins`; the others find
    /// the few bins they are near by bisection over the bins in order of their centres (the peak
    /// search gathers for up to 80 bins at once).
    func gather(near bins: [Int], queryFrames: Double) {
        let binWidth = 1 << OffsetHistogram.binShift
        let drift = Self.drift(queryFrames: queryFrames)
        while nearHits.count < bins.count {
            nearHits.append([])
            nearCenters.append(0)
        }
        for k in nearHits.indices { nearHits[k].removeAll(keepingCapacity: true) }
        guard !bins.isEmpty else { return }
        for k in bins.indices { nearCenters[k] = bins[k] * binWidth + binWidth / 2 - margin }
        let centers = nearCenters
        var order = Scratch.take(&binsByCenter)
        defer { binsByCenter = order }
        order.append(contentsOf: bins.indices)
        order.sort { centers[$0] != centers[$1] ? centers[$0] < centers[$1] : $0 < $1 }
        let margin = self.margin, shift = OffsetHistogram.binShift
        for c in centers.prefix(bins.count) { nearBins.mark(((c - drift + margin) >> shift)...((c + drift + margin) >> shift)) }
        defer { nearBins.clear() }
        let hitQueryFrame = hits.queryFrame, hitReferenceFrame = hits.referenceFrame
        nearBins.withLookup { near in
            for i in 0..<hitQueryFrame.count {
                let offset = Int(hitReferenceFrame[i]) - Int(hitQueryFrame[i])
                guard near.contains((offset + margin) >> shift) else { continue }
                // The first bin whose centre is at least offset − drift, then on while within drift.
                var lo = 0, hi = order.count
                while lo < hi {
                    let mid = (lo + hi) / 2
                    if centers[order[mid]] < offset - drift { lo = mid + 1 } else { hi = mid }
                }
                while lo < order.count, centers[order[lo]] <= offset + drift {
                    nearHits[order[lo]].append(Int32(i))
                    lo += 1
                }
            }
        }
    }

    /// The candidate the hits gathered near bin `k` make under hypothesis `hypothesis`, if it has
    /// `minimumInliers`: query anchors (distinct frames) on the fitted line whose anchor frequency
    /// also agrees with the measured pitch to a fraction of a bin.
    func fit(_ k: Int, hypothesis: Int, queryFrames: Double, minimumInliers: Int,
             slopes: ClosedRange<Double> = MatchThresholds.fitSlopes) -> Matcher.Candidate? {
        xs.removeAll(keepingCapacity: true)
        ys.removeAll(keepingCapacity: true)
        candidateHits.removeAll(keepingCapacity: true)
        let hitQueryFrame = hits.queryFrame, hitReferenceFrame = hits.referenceFrame
        for hit in nearHits[k] {
            let i = Int(hit)
            xs.append(Double(hitQueryFrame[i]))
            ys.append(Double(hitReferenceFrame[i]))
            candidateHits.append(i)
        }
        guard xs.count >= minimumInliers else { return nil }
        let drift = Self.drift(queryFrames: queryFrames)
        let center = nearCenters[k]
        let line = xs.withUnsafeBufferPointer { x in
            ys.withUnsafeBufferPointer { y in
                lineFit.fit(xs: x, ys: y, interceptCenter: Double(center), interceptRadius: Double(drift),
                            slopes: slopes)
            }
        }
        guard line.inliers >= minimumInliers else { return nil }

        // Frequency skew: median ratio of query to reference anchor frequency over the inliers.
        ratios.removeAll(keepingCapacity: true)
        for (k, i) in candidateHits.enumerated() where abs(ys[k] - line.intercept - line.slope * xs[k]) <= LineFit.tolerance {
            ratios.append(hits.queryBin(ofHit: i) / hits.referenceBin(ofHit: i))
        }
        ratios.sort()
        guard !ratios.isEmpty else { return nil }
        let pitch = ratios[ratios.count / 2]
        // Evidence: inliers whose anchor frequency also agrees with that ratio to a fraction of a
        // bin. The hash only pins the anchor to a bin; chance hits rarely agree finer.
        var aligned = 0
        var midFrame = 0.0
        inlierFrames.removeAll(keepingCapacity: true)
        for (k, i) in candidateHits.enumerated() where abs(ys[k] - line.intercept - line.slope * xs[k]) <= LineFit.tolerance {
            if abs(hits.queryBin(ofHit: i) / pitch - hits.referenceBin(ofHit: i)) <= MatchThresholds.binTolerance {
                aligned += 1
                midFrame += ys[k]
                inlierFrames.append(hitQueryFrame[i])
            }
        }
        inlierFrames.sort()
        var inliers = 0
        var previousFrame: Int32 = -1
        for f in inlierFrames where f != previousFrame {
            inliers += 1
            previousFrame = f
        }
        guard inliers >= minimumInliers else { return nil }
        midFrame /= Double(aligned)
        guard let reference = catalog.referenceIndex(containing: Int(midFrame)) else { return nil }
        let timeScale = Double(Matcher.hypotheses[hypothesis].timeScale)
        let hop = FingerprintParameters.hopDuration
        return Matcher.Candidate(
            referenceIndex: reference,
            offset: (line.intercept - Double(catalog.references[reference].startFrame)) * hop,
            timeScale: line.slope * timeScale, pitchRatio: pitch, inliers: inliers,
            confidence: CandidateVerification.confidence(inliers: inliers, required: requiredInliers), alignedHits: aligned)
    }
}
