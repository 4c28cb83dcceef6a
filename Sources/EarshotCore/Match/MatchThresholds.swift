/// Every tuned number of the match, by the stage that uses it, and the schedules built from them.
/// Each says in one line why it holds its value and where that is measured.
enum MatchThresholds {
    // MARK: The evidence a match needs

    /// Fewest aligned anchors of a match: at 9 chance lets more held-out music through, 11 stops no more (benchmarks/studies/pitch-shifts-and-common-keys.md).
    static let minimumInliers = 10
    /// Index entries (about 10 h) `minimumInliers` holds for; chance needs an anchor more per tenfold beyond (benchmarks/RESULTS.md, 'Scale').
    static let entriesAtMinimumInliers = 1_000_000
    /// Inliers that end the search at unchanged speed: chance aligns at most 7 of audio not in the catalog (benchmarks/RESULTS.md, 'Scale').
    static let decisiveInliers = 24
    /// Anchors below the minimum at which confidence would be 0: so 0.46 at the minimum (benchmarks/RESULTS.md, 'Confidence calibration (pooled)').
    static let confidenceAnchorsBelowMinimum = 5
    /// Anchors over which confidence closes 1 − 1/e of its gap to 1: 0.8 at 8 over the minimum (benchmarks/RESULTS.md, 'Confidence calibration (pooled)').
    static let confidenceAnchorScale = 8.0
    /// Seconds a query may pass its catalog's duration limits: window lengths are whole analysis hops (derived, not tuned).
    static let durationSlack = 0.05

    // MARK: The speed and pitch search

    /// Offset bins fitted per hypothesis: the right place and a few repeats or chance places (set with the search, not measured on its own).
    static let candidatesPerHypothesis = 4
    /// Hypotheses searched fully after the coarse stage: the best and the runner-up (set with the coarse stage, not measured on its own).
    static let refinedHypotheses = 2
    /// Every fourth anchor ranks hypotheses as every third does, in a quarter less time; every eighth loses pitch shifts (benchmarks/studies/speed-change-under-noise.md).
    static let coarseAnchorStride = 4
    /// Postings per key the coarse stage reads, as a multiple of the catalog's mean per key: commoner keys give two thirds of a 100 h search's hits and few right ones; 10× loses pitch shifts at 100 h (benchmarks/studies/common-keys-in-the-coarse-stage.md).
    static let coarseCommonKeyFactor = 16
    /// The least of that limit, for small catalogs whose mean is a fraction of a posting: 64 ranks as every key does at 3.3 and 100 h (benchmarks/studies/common-keys-in-the-coarse-stage.md).
    static let coarseLeastPostingLimit = 64
    /// Coarse anchors that rank the best hypothesis: a speed change under noise shows 3 or 4 there (benchmarks/studies/speed-change-under-noise.md).
    static let coarseFloor = 3
    /// Coarse anchors that rank the runner-up (below: the best is weakly ranked): from 3, a point or two for a quarter more time (benchmarks/studies/speed-change-under-noise.md).
    static let verificationFloor = 5
    /// Anchors more for a refined hypothesis: twenty hypotheses give chance twenty places, 2 more chance matches in 2000 without (benchmarks/studies/speed-change-under-noise.md).
    static let refinedExtraInliers = 1
    /// Anchors more for a weakly ranked hypothesis, searched for nearly every query that gets this far (benchmarks/studies/speed-change-under-noise.md).
    static let weakRefinedExtraInliers = 2
    /// Speeds a fitted line may have: the hypotheses' range (derived from `Matcher.hypotheses`, not tuned).
    static let fitSlopes: ClosedRange<Double> = 0.94...1.06
    /// Share of the query's frames a match's hits may drift from their bin's centre: the hypotheses' ±6 % and a little (derived, not tuned).
    static let driftShare = 0.07
    /// Least score (hits in a bin and its neighbours) of a bin a search fits: one or two hits say nothing (benchmarks/studies/speed-change-under-noise.md).
    static let leastCandidateBinScore = 2
    /// Bins an inlier's anchor may sit from where the measured pitch puts it: stored to 1/16 bin, peaks jitter about 0.1 (derived, not tuned).
    static let binTolerance = 0.3

    // MARK: The room search

    /// Frames either side the room search probes: a room makes peaks 1–6 frames late; ±1.5 finds 3 points less in rooms (benchmarks/studies/room-search.md).
    static let roomFrameTolerance: Float = 2.0
    /// Anchors more for a room candidate: the wider probes let rhythm alone align (benchmarks/studies/room-search.md).
    static let roomExtraInliers = 1
    /// Peak score every room candidate needs: without the check, chance matches go from 2 to 11 of 800 (benchmarks/studies/room-search.md).
    static let roomScore = 3.0

    // MARK: Confirmation by the reference's peaks

    /// Fewest aligned anchors a confirmation starts from: from 5, rooms lose 4–8 points; from 3, chance comes back (benchmarks/studies/confirmation-chance-at-shifts.md).
    static let confirmationFloor = 4
    /// Peak score a confirmation asks: other music of the same album scores up to 1.5, right places 3 or more (benchmarks/studies/confirmation-chance-at-shifts.md).
    static let verificationScore = 3.0
    /// Scores at `confirmationFloor` anchors and one more: chance places of other music reach 4.9 there, right places mostly score 5 up (benchmarks/studies/confidence-at-the-bottom.md).
    static let fewAnchorConfirmationScores = [5.0, 4.5]
    /// Seconds a session's followed place may move in the fit and still be the place asked about (set with the session, not measured on its own).
    static let followedPlaceTolerance = 0.5

    // MARK: The peak search

    /// Busiest offset bins the peak search looks at: 64 find 2–6 points more in rooms and noise, chance unchanged (benchmarks/studies/peak-search.md).
    static let peakSearchBins = 64
    /// Fewest aligned anchors of a place the peak search fits: places from one anchor find few more (benchmarks/studies/peak-search.md).
    static let peakSearchLeastInliers = 2
    /// Least hits (a bin and its neighbours) of a place the peak search looks at: a fit from 2 anchors needs 2 (derived, not tuned).
    static let placeScore = 2
    /// Places of rare landmarks looked at beyond the busiest: 16 find 3 more of other music at 0 dB, lose none (benchmarks/studies/peak-search.md).
    static let rareLandmarkPlaces = 16
    /// Most hits of a rare landmark: the others are most hits at 100 h, and the same places are found without them (benchmarks/studies/peak-search.md).
    static let rareLandmarkHits = 16
    /// Peak score a place of 2–3 anchors needs: up to 80 places are looked at, and negatives' places reach 5.5 (benchmarks/studies/peak-search.md).
    static let peakSearchScore = 6.0
    /// Less asked per anchor beyond `confirmationFloor − 1`: chance over the places falls about so (benchmarks/studies/peak-search.md).
    static let peakSearchScoreStep = 1.0
    /// The least asked of any place: above 0, which `CandidateVerification.confirmed` relies on (benchmarks/studies/peak-search.md).
    static let peakSearchLeastScore = 1.0
    /// More than a confirmation asks at its fewest anchors: the peak search looks at up to 80 places, a search's confirmation at a few (benchmarks/studies/confidence-at-the-bottom.md).
    static let peakSearchFewAnchorMargin = 0.5

    // MARK: Which place leads

    /// Peak score by which another place of a reference leads: 1.5 leads 6 more queries right and 1 away, 1 leads 4 away (benchmarks/studies/which-place-leads.md).
    static let leadMargin = 1.5
    /// Peak score by which a place no search found leads: 2.5 leads 2 more right than 3, none away (benchmarks/studies/which-place-leads.md).
    static let elsewhereMargin = 2.5
    /// Seconds apart that places of one reference are different places (set with the ranking, not measured on its own).
    static let distinctPositions = 1.0
    /// Share of the best place's inliers at which another place scores alike (set with the ranking, not measured on its own).
    static let alikeShare = 0.75
    /// A reference stays listed with 1 / this of the best one's inliers: a shared intro matches several (set with the ranking, not measured on its own).
    static let keptReferenceDivisor = 4

    // MARK: Reading the index

    /// Keys whose postings are warmed together: 128–512 keep enough reads in flight and stay in cache (benchmarks/studies/match-time-optimizations.md).
    static let warmChunk = 256
    /// Hits after which collection stops, so a pathological catalog cannot stall a query (a bound, not tuned).
    static let maximumHits = 1 << 20
    /// Peak records above which a reference gets cursors: a shorter one is walked as fast as a cursor is found (not measured on its own).
    static let peakCursorThreshold = 4 * MappedCatalog.peakCursorStride

    // MARK: Schedules

    /// Aligned anchors a match requires in a catalog of `entryCount` index entries: chance grows with the
    /// catalog, so one more per tenfold entries beyond `entriesAtMinimumInliers`.
    static func requiredInliers(entryCount: Int) -> Int {
        var required = minimumInliers, limit = entriesAtMinimumInliers
        while entryCount > limit, limit <= Int.max / 10 {
            required += 1
            limit *= 10
        }
        return required
    }

    /// The score a search's confirmation asks of a candidate with `inliers` aligned anchors: 5 at
    /// 4, 4.5 at 5, `verificationScore` from 6, as many anchors later as the catalog requires beyond
    /// `minimumInliers`. The anchors are counted as found: the room search's and a refined
    /// hypothesis's extra anchors are not taken off.
    static func confirmationScore(inliers: Int, requiredInliers: Int) -> Double {
        let beyond = anchors(inliers, beyond: confirmationFloor, requiredInliers: requiredInliers)
        return beyond < fewAnchorConfirmationScores.count ? fewAnchorConfirmationScores[beyond] : verificationScore
    }

    /// The score the peak search asks of a place with `inliers` aligned anchors: 6 at 2–3, 5.5 at
    /// 4, 5 at 5 (`peakSearchFewAnchorMargin` over a confirmation there), 3 at 6, 2 at 7, 1 from 8,
    /// as many anchors later as the catalog requires beyond `minimumInliers`.
    static func peakSearchScore(inliers: Int, requiredInliers: Int) -> Double {
        let beyond = anchors(inliers, beyond: confirmationFloor - 1, requiredInliers: requiredInliers)
        let falling = max(peakSearchLeastScore, peakSearchScore - peakSearchScoreStep * Double(beyond))
        let confirmation = confirmationScore(inliers: inliers, requiredInliers: requiredInliers)
        return confirmation > verificationScore ? max(falling, confirmation + peakSearchFewAnchorMargin) : falling
    }

    /// Postings a key of a catalog of `entryCount` index entries may have in the coarse stage:
    /// `coarseCommonKeyFactor` times the mean over the 2²¹ pair keys, from `coarseLeastPostingLimit`
    /// up to the limit every search has (`MappedCatalog.maximumPostingsPerKey`, from about 650 h).
    static func coarsePostingLimit(entryCount: Int) -> Int {
        let mean = Double(entryCount) / Double(1 << LandmarkHasher.pairKeyBits)
        let limit = Double(coarseCommonKeyFactor) * mean
        return limit >= Double(MappedCatalog.maximumPostingsPerKey) ? MappedCatalog.maximumPostingsPerKey
            : max(coarseLeastPostingLimit, Int(limit))
    }

    /// Where a schedule of scores by aligned anchors stands: `inliers` past `start` (0 at or below
    /// it), counted from as many anchors later as the catalog requires beyond `minimumInliers`.
    static func anchors(_ inliers: Int, beyond start: Int, requiredInliers: Int) -> Int {
        max(0, inliers - start - (requiredInliers - minimumInliers))
    }
}
