/// The search under one hypothesis (`Matcher.hypotheses`): collects its hits (`HitCollector`),
/// fits candidates at its busiest offset bins (`BinRanking`, `CandidateFitter`), and keeps those
/// with enough aligned anchors, or fewer that the reference's peaks confirm
/// (`CandidateVerification`).
struct HypothesisSearch {
    let hits: HitCollector
    let bins: BinRanking
    let fitter: CandidateFitter
    let verification: CandidateVerification
    let requiredInliers: Int

    /// The candidates of hypothesis `h`: those with `evidenceFloor + extraInliers` aligned anchors,
    /// or fewer that the reference's peaks confirm. The coarse stage (`anchorStride` > 1, a
    /// quarter of the anchors) only ranks hypotheses: there every candidate from
    /// `MatchThresholds.coarseFloor` up counts as it is, since a right match shows a quarter of its
    /// anchors there. `frameTolerance`, `beyond` and `postingLimit` are `HitCollector.collect`'s.
    /// `peakScore`, when given, is asked of every candidate's peak check (the room search), and
    /// its `extraInliers` are taken off the confidence: they make up for anchors the wider probes
    /// align by chance, so a room candidate at the minimum means what a match at the minimum does.
    /// With `listingPlaces` above 0, that many of the busiest bins are listed for the peak search
    /// (`HitCollector.listedPlaces`) in the same walk of the histogram.
    func candidates(hypothesis h: Int, anchorStride: Int, queryFrames: Double, evidenceFloor: Int, extraInliers: Int = 0,
                    frameTolerance: Float = LandmarkHasher.queryFrameTolerance, beyond inner: Float? = nil,
                    peakScore: Double? = nil, listingPlaces places: Int = 0,
                    postingLimit: Int = MappedCatalog.maximumPostingsPerKey) -> [Matcher.Candidate] {
        hits.collect(hypothesis: h, anchorStride: anchorStride, frameTolerance: frameTolerance, beyond: inner,
                     postingLimit: postingLimit, within: bins.histogram)
        if inner != nil, hits.count >= MatchThresholds.maximumHits {
            // At the cap, the kept hits crowd out the wider probes': search afresh, as if alone.
            hits.collect(hypothesis: h, anchorStride: anchorStride, frameTolerance: frameTolerance,
                         postingLimit: postingLimit, within: bins.histogram)
        }
        let required = evidenceFloor + extraInliers
        let floor = anchorStride > 1 ? MatchThresholds.coarseFloor : min(required, MatchThresholds.confirmationFloor)
        let (chosen, listed) = bins.busiest(MatchThresholds.candidatesPerHypothesis,
                                            from: max(MatchThresholds.leastCandidateBinScore, floor / 2), places: places)
        if places > 0 { hits.listedPlaces = listed }
        fitter.gather(near: chosen, queryFrames: queryFrames)
        var candidates: [Matcher.Candidate] = []
        for k in chosen.indices {
            guard var c = fitter.fit(k, hypothesis: h, queryFrames: queryFrames, minimumInliers: floor)
            else { continue }
            var check: PeakVerification.Result?
            if let peakScore {
                let result = verification.check(c, queryFrames: queryFrames)
                let score = result.score(explained: c.inliers + c.alignedHits)
                guard score >= peakScore else { continue }
                check = result
                c.peakScore = score
                c.confidence = CandidateVerification.confidence(inliers: c.inliers - extraInliers, required: requiredInliers)
            }
            if c.inliers >= required || anchorStride > 1 {
                candidates.append(c)
            } else if let confirmed = verification.confirmed(c, queryFrames: queryFrames, check: check) {
                candidates.append(confirmed)
            }
        }
        return candidates
    }
}
