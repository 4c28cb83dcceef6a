/// Chooses offset bins (`OffsetHistogram`) of the hits held (`HitCollector`): the busiest ones,
/// where a search fits its candidates and the peak search looks, and those where the query's
/// rarer landmarks hit.
final class BinRanking {
    private(set) var histogram: OffsetHistogram
    private let hits: HitCollector
    // Scratch of `rareLandmarkBins`: the hits of rare landmarks, their weights, the bins kept apart from.
    private var rareQueryFrame: [Int32] = []
    private var rareReferenceFrame: [Int32] = []
    private var hitWeights: [Float] = []
    private var takenBins: [Int] = []

    init(histogram: OffsetHistogram, hits: HitCollector) {
        self.histogram = histogram
        self.hits = hits
    }

    /// The `count` busiest offset bins of the hits held, from `minimumScore` up (a bin's score
    /// counts its neighbours' hits too), busiest first; a bin within 2 of a busier one chosen is
    /// the same place and is passed over.
    func busiest(_ count: Int, from minimumScore: Int) -> [Int] {
        busiest(count, from: minimumScore, places: 0).chosen
    }

    /// As `busiest(_:from:)`, and in the same walk the `places` busiest from
    /// `MatchThresholds.placeScore` (where the peak search looks; none when `places` is 0).
    func busiest(_ count: Int, from minimumScore: Int, places: Int) -> (chosen: [Int], places: [Int]) {
        var shortlist = BinShortlist<Int>(choosing: count)
        var placeList = BinShortlist<Int>(choosing: places)
        let least = places > 0 ? min(minimumScore, MatchThresholds.placeScore) : minimumScore
        histogram.forEachBin(queryFrames: hits.queryFrame, referenceFrames: hits.referenceFrame) { bin, score in
            guard score >= least else { return }
            if score >= minimumScore { shortlist.offer(score, bin: bin) }
            if places > 0 { placeList.offer(score, bin: bin) }
        }
        return (shortlist.chosen(), placeList.chosen())
    }

    /// Up to `count` offset bins of the hits held, none within 2 of a bin in `taken`, ranked by
    /// the hits of rare landmarks (`MatchThresholds.rareLandmarkHits`) each weighted by 1 / the
    /// hits of its landmark (a landmark that hits everywhere says little about any one place),
    /// summed over bin − 1 … bin + 1 as a bin's hits are; from 2 such hits there, what a fit from
    /// 2 anchors needs (two hits of one anchor pass here and fail the fit).
    func rareLandmarkBins(_ count: Int, apartFrom taken: [Int]) -> [Int] {
        guard count > 0, !hits.source.isEmpty else { return [] }
        var queryFrames = Scratch.take(&rareQueryFrame), referenceFrames = Scratch.take(&rareReferenceFrame)
        var weights = Scratch.take(&hitWeights)
        defer {
            rareQueryFrame = queryFrames
            rareReferenceFrame = referenceFrames
            hitWeights = weights
        }
        // `HitCollector.collect` appends each landmark's hits together: a landmark's hits are a run.
        hits.source.withUnsafeBufferPointer { sources in
            hits.queryFrame.withUnsafeBufferPointer { allQueryFrames in
                hits.referenceFrame.withUnsafeBufferPointer { allReferenceFrames in
                    var start = 0
                    while start < sources.count {
                        let landmark = sources[start] >> 4
                        var end = start + 1
                        while end < sources.count, sources[end] >> 4 == landmark { end += 1 }
                        assert(end == sources.count || sources[end] >> 4 > landmark, "a landmark's hits are one run")
                        let landmarkHits = end - start
                        if landmarkHits <= MatchThresholds.rareLandmarkHits {
                            queryFrames.append(contentsOf: UnsafeBufferPointer(rebasing: allQueryFrames[start..<end]))
                            referenceFrames.append(contentsOf: UnsafeBufferPointer(rebasing: allReferenceFrames[start..<end]))
                            weights.append(contentsOf: repeatElement(1 / Float(landmarkHits), count: landmarkHits))
                        }
                        start = end
                    }
                }
            }
        }
        var apart = Scratch.take(&takenBins)
        defer { takenBins = apart }
        apart.append(contentsOf: taken)
        apart.sort()
        var shortlist = BinShortlist<Double>(choosing: count)
        histogram.forEachBin(queryFrames: queryFrames, referenceFrames: referenceFrames,
                             weights: weights) { bin, binHits, weight in
            guard binHits >= 2, shortlist.admits(weight, bin: bin) else { return }
            // The first bin taken at bin − 2 or later: within 2 if it is at most bin + 2.
            var lo = 0, hi = apart.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if apart[mid] < bin - 2 { lo = mid + 1 } else { hi = mid }
            }
            guard lo == apart.count || apart[lo] > bin + 2 else { return }
            shortlist.offer(weight, bin: bin)
        }
        return shortlist.chosen()
    }
}
