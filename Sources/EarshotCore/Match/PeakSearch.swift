/// The last resort of a query every stage leaves without a candidate, and the other places of the
/// references a result lists. A room or loud noise can leave only a few aligned anchors at the
/// right place, fewer than even a confirmation starts from, while the reference's own peaks stand
/// far above chance there. So the busiest offset bins of the room search's hits, and the places
/// where its rarer landmarks hit, are each fitted from a few aligned anchors at unchanged speed —
/// two or three hits cannot measure a slope, and a slope fitted freely between 0.94 and 1.06
/// misplaces the query's end by up to half a second — and confirmed by the reference's peaks.
struct PeakSearch {
    let catalog: SearchedCatalogs
    let hits: HitCollector
    let bins: BinRanking
    let fitter: CandidateFitter
    let verification: CandidateVerification

    /// The places of the room search's hits (held now, `busiest` of their bins) that the
    /// reference's peaks confirm (`MatchThresholds.peakSearchScore(inliers:requiredInliers:)`),
    /// marked as found by the last resort alone.
    func lastResort(queryFrames: Double, busiest: Int, requiredInliers: Int) -> [Matcher.Candidate] {
        fittedPlaces(queryFrames: queryFrames, busiest: busiest).compactMap { c in
            var confirmed = verification.confirmed(
                c, queryFrames: queryFrames,
                score: MatchThresholds.peakSearchScore(inliers: c.inliers, requiredInliers: requiredInliers))
            confirmed?.lastResort = true
            return confirmed
        }
    }

    /// Other places in `references` (those a result lists) that the room search's hits point to.
    /// They only compete to lead their reference (`MatchRanking.leading`): in a room a partial
    /// repeat can gather more anchors than the right place, which may gather too few to pass any
    /// search.
    func otherPlaces(in references: Set<Int>, queryFrames: Double, busiest: Int) -> [Matcher.Candidate] {
        fittedPlaces(in: references, queryFrames: queryFrames, busiest: busiest)
    }

    /// The places the hits held make in up to `busiest` of their busiest offset bins and
    /// `MatchThresholds.rareLandmarkPlaces` where their rarer landmarks hit — those in
    /// `references` when given — each fitted at unchanged speed.
    private func fittedPlaces(in references: Set<Int>? = nil, queryFrames: Double, busiest: Int) -> [Matcher.Candidate] {
        guard busiest > 0 else { return [] }
        var places = hits.listedPlaces ?? bins.busiest(busiest, from: MatchThresholds.placeScore)
        // The places listed in the walk of the search that collected the hits are these hits' own.
        assert(hits.listedPlaces == nil || places == bins.busiest(busiest, from: MatchThresholds.placeScore),
               "the places listed are not those of the hits held")
        places += bins.rareLandmarkBins(MatchThresholds.rareLandmarkPlaces, apartFrom: places)
        if let references {
            let binWidth = 1 << OffsetHistogram.binShift, margin = bins.histogram.margin
            places.removeAll {
                // The reference the bin's centre puts the query's middle in, as `CandidateFitter.fit` places a fit.
                let middle = $0 * binWidth + binWidth / 2 - margin + Int(queryFrames / 2)
                return catalog.referenceIndex(containing: middle).map { !references.contains($0) } ?? true
            }
        }
        fitter.gather(near: places, queryFrames: queryFrames)
        return places.indices.compactMap { k in
            guard let c = fitter.fit(k, hypothesis: Matcher.unchangedSpeed, queryFrames: queryFrames,
                                     minimumInliers: MatchThresholds.peakSearchLeastInliers, slopes: 1...1),
                references?.contains(c.referenceIndex) ?? true
            else { return nil }
            return c
        }
    }
}
