/// Finds which references of a catalog a query signature comes from, where, and at what speed
/// and pitch (`SHSession.match`).
///
/// 1. The query's strongest peaks are mapped into reference coordinates under a hypothesis (a
///    speed change, or a pitch shift with the tempo kept) and hashed; each hash's postings are
///    hits, each voting for an offset bin (`HitCollector`, `BinRanking`).
/// 2. The busiest bins become candidates, each fitted with a line whose inliers are the evidence
///    (`CandidateFitter`); a candidate a few inliers short is checked against the reference's
///    stored peaks (`CandidateVerification`): a room breaks most landmarks but leaves single
///    peaks in place. One hypothesis is searched so (`HypothesisSearch`).
/// 3. Hypotheses are searched in stages (`referenceCandidates`): unchanged audio first (most
///    audio), stopping there on a clear match; otherwise unchanged audio again as a room leaves it,
///    every other hypothesis with a quarter of the anchors and the rarer keys, then the best ones
///    fully. When none of them finds anything, the room search's hits are looked at once more for
///    a place where the reference's own peaks stand far above chance (`PeakSearch`).
/// 4. References are ranked by their evidence; within one, the position that holds clearly more
///    of the reference's peaks leads (`MatchRanking`).
///
/// Every tuned number is in `MatchThresholds`. A matcher owns reusable scratch space: one
/// instance serves one thread at a time.
public final class Matcher {
    /// The catalog searched (the first of them, for a matcher `CatalogSetMatcher` makes over several).
    public let catalog: MappedCatalog
    /// Every catalog searched, on one timeline; a candidate's `referenceIndex` numbers across them.
    let catalogs: SearchedCatalogs

    /// How the query is mapped into reference coordinates before hashing (`LandmarkHasher`).
    public struct Hypothesis: Sendable, Equatable {
        /// Reference seconds per query second.
        public var timeScale: Float
        /// Query frequency / reference frequency.
        public var pitch: Float
    }
    /// Speed changes (pitch and tempo together) of 0.94…1.06 in 1 % steps cover PAL speed-up
    /// (4.1 %) and slow-downs; pitch shifts with the tempo kept (a semitone is 5.9 %) over the
    /// same range. A pitch shift within 2 % is found under the speed change of the same pitch:
    /// the time it wrongly maps is under a frame for most pairs. The first is unchanged audio.
    public static let hypotheses: [Hypothesis] = [Hypothesis(timeScale: 1, pitch: 1)]
        + (0...12).filter { $0 != 6 }.map { let s = 0.94 + 0.01 * Float($0); return Hypothesis(timeScale: s, pitch: s) }
        + [0.94, 0.95, 0.96, 0.97, 1.03, 1.04, 1.05, 1.06].map { Hypothesis(timeScale: 1, pitch: $0) }
    static let unchangedSpeed = 0

    /// Fewest aligned query anchors that make a match in a catalog of up to a million index entries.
    public static let minimumInliers = MatchThresholds.minimumInliers
    /// Aligned anchors a match requires in a catalog of `entryCount` index entries: one more per
    /// tenfold beyond a million.
    public static func requiredInliers(entryCount: Int) -> Int {
        MatchThresholds.requiredInliers(entryCount: entryCount)
    }
    /// What this catalog requires (`requiredInliers(entryCount:)`).
    public let requiredInliers: Int
    /// Inliers that end the search at unchanged speed: chance never gets near.
    public static let decisiveInliers = MatchThresholds.decisiveInliers
    /// Aligned anchors (of the coarse stage's quarter) from which the runner-up hypothesis is
    /// searched fully, and below which the best one counts as weakly ranked (`refined`).
    public static let verificationFloor = MatchThresholds.verificationFloor
    /// Fewest aligned anchors a candidate needs to be checked against the reference's peaks.
    public static let confirmationFloor = MatchThresholds.confirmationFloor
    /// How far beyond chance (standard deviations) the reference's peaks must stand to confirm a
    /// candidate with more anchors than the fewest, and a session's followed place.
    public static let verificationScore = MatchThresholds.verificationScore
    /// How far (seconds) a query may pass its catalog's duration limits.
    public static let durationSlack = MatchThresholds.durationSlack

    /// Maps aligned-anchor counts to 0…1, the same margin over chance at any catalog size
    /// (`CandidateVerification.confidence`).
    public static func confidence(inliers: Int, required: Int) -> Double {
        CandidateVerification.confidence(inliers: inliers, required: required)
    }

    /// How far `referenceCandidates` searches.
    public enum SearchDepth: Sendable {
        /// Unchanged audio only (stage 1): what a clear match needs.
        case unchangedSpeed
        /// Every stage, unless stage 1 is decisive.
        case full
        /// Stages 2 and 3, after a stage 1 whose candidates, as found (`lastFound` after an
        /// `.unchangedSpeed` search), are given.
        case beyond([Candidate])
    }

    /// A reference-level match before media-item rules are applied.
    public struct Candidate: Sendable {
        public var referenceIndex: Int
        /// Reference seconds at the query's start.
        public var offset: Double
        /// Reference seconds per query second.
        public var timeScale: Double
        /// Query frequency / reference frequency.
        public var pitchRatio: Double
        /// Query anchors (distinct frames) whose hits lie on the match line: the evidence.
        public var inliers: Int
        public var confidence: Double
        /// Hits (anchor–target pairs) on the match line whose anchor frequency agrees: the
        /// reference peaks the hash vote has already counted are at most `inliers + alignedHits`.
        public var alignedHits = 0
        /// Found by the peak search alone (`PeakSearch.lastResort`): it counts only when nothing
        /// else is found, within one catalog and across the catalogs searched together.
        public var lastResort = false
        /// The reference's peaks at this place, standard deviations above chance
        /// (`PeakVerification.Result.score`), when a search checked them: a room candidate, a
        /// confirmation, the peak search's places.
        public var peakScore: Double?
    }

    /// Postings per key the coarse stage reads (`MatchThresholds.coarsePostingLimit`): it only
    /// ranks hypotheses, and a catalog's commonest keys give most of its hits but few right ones.
    /// The benchmark's study raises it to `MappedCatalog.maximumPostingsPerKey` (the most any
    /// search reads) to compare.
    public var coarsePostingLimit: Int

    /// Fewest inliers a candidate needs without the peak check (from `confirmationFloor` up to
    /// here it needs the check; one more under a hypothesis the coarse stage chose, two under one
    /// it ranked on fewer than `verificationFloor`). The benchmark's calibration lowers it to see
    /// how far chance alignments reach.
    public var evidenceFloor: Int
    /// The busiest offset bins the peak search looks at (`PeakSearch`); 0 turns it off, with the
    /// places of rare landmarks. The benchmark's calibration does, to see what aligned anchors
    /// alone let through.
    public var peakSearchBins = MatchThresholds.peakSearchBins

    /// Every candidate the last `referenceCandidates` found, before ranking: what a `.beyond`
    /// search goes on from (ranking drops positions that `MatchRanking.leading` may still prefer).
    public private(set) var lastFound: [Candidate] = []

    let hits: HitCollector
    let bins: BinRanking
    private let fitter: CandidateFitter
    private let verification: CandidateVerification
    private let search: HypothesisSearch
    private let peakSearch: PeakSearch

    public convenience init(catalog: MappedCatalog) {
        self.init(searching: SearchedCatalogs(single: catalog))
    }

    /// A matcher over several catalogs at once (`SearchedCatalogs`): the evidence a match needs
    /// is that of one catalog of their total size.
    init(searching catalogs: SearchedCatalogs) {
        self.catalog = catalogs.members[0]
        self.catalogs = catalogs
        requiredInliers = MatchThresholds.requiredInliers(entryCount: catalogs.entryCount)
        evidenceFloor = requiredInliers
        coarsePostingLimit = MatchThresholds.coarsePostingLimit(entryCount: catalogs.entryCount)
        let margin = Int(2 * catalogs.maximumQuerySignatureDuration / FingerprintParameters.hopDuration) + 64
        let histogram = OffsetHistogram(timelineFrames: catalogs.timelineFrames, margin: margin)
        hits = HitCollector(catalog: catalogs)
        bins = BinRanking(histogram: histogram, hits: hits)
        fitter = CandidateFitter(catalog: catalogs, hits: hits, histogram: histogram, requiredInliers: requiredInliers)
        verification = CandidateVerification(catalog: catalogs, requiredInliers: requiredInliers)
        search = HypothesisSearch(hits: hits, bins: bins, fitter: fitter, verification: verification,
                                  requiredInliers: requiredInliers)
        peakSearch = PeakSearch(catalog: catalogs, hits: hits, bins: bins, fitter: fitter, verification: verification)
    }

    /// One match attempt. Refuses signatures outside the catalog's query duration limits.
    public func match(_ signature: Signature) -> MatchResult {
        let slack = MatchThresholds.durationSlack
        guard signature.duration + slack >= catalogs.minimumQuerySignatureDuration else {
            return .error(.signatureDurationInvalid(
                "query is \(signature.duration.decimalText(places: 2)) s; this catalog needs at least \(catalogs.minimumQuerySignatureDuration.decimalText(places: 2)) s"))
        }
        guard signature.duration <= catalogs.maximumQuerySignatureDuration + slack else {
            return .error(.signatureDurationInvalid(
                "query is \(signature.duration.decimalText(places: 2)) s; this catalog accepts at most \(catalogs.maximumQuerySignatureDuration.decimalText(places: 2)) s"))
        }
        return result(of: referenceCandidates(signature), for: signature)
    }

    /// The media items of `candidates` (from `referenceCandidates` of `signature`), best first.
    public func result(of candidates: [Candidate], for signature: Signature) -> MatchResult {
        var results: [MatchedMediaItem] = []
        for c in candidates {
            let items = catalogs.mediaItems(ofReference: c.referenceIndex)
            let duration = catalogs.references[c.referenceIndex].duration
            // A query whose end lies past the reference's (the programme ended, or jumped) is
            // placed at the end: nothing of the reference plays later than that.
            let current = min(MatchedMediaItem.offset(c.offset, timeSkew: c.timeScale - 1, after: signature.duration), duration)
            // Time-ranged items follow the current position, as a second screen shows what is on now.
            guard let selected = MediaItemSelection.select(items, offset: current, frequencySkew: c.pitchRatio - 1,
                                                           basicItemID: "reference-\(catalogs.local(c.referenceIndex).reference)")
            else { continue }
            for item in selected {
                results.append(MatchedMediaItem(
                    mediaItem: item, matchOffset: c.offset, predictedCurrentMatchOffset: current,
                    frequencySkew: c.pitchRatio - 1, timeSkew: c.timeScale - 1, confidence: c.confidence,
                    referenceIndex: c.referenceIndex, referenceDuration: duration))
            }
        }
        return results.isEmpty ? .noMatch : .match(results)
    }

    /// Every reference the query matches, best first. Several catalogs searched together
    /// (`CatalogSetMatcher`) search each at `.unchangedSpeed` first, and go on (`.beyond`) only
    /// when none of them is decisive, as one matcher does over one catalog.
    public func referenceCandidates(_ signature: Signature, depth: SearchDepth = .full) -> [Candidate] {
        verification.signaturePeaks = signature.peaks
        defer { verification.signaturePeaks = [] }
        hits.query(signature)
        let queryFrames = signature.duration / FingerprintParameters.hopDuration

        var found: [Candidate]
        let goOn: Bool
        switch depth {
        case .unchangedSpeed:
            found = unchangedAudio(queryFrames: queryFrames)
            goOn = false
        case .full:
            found = unchangedAudio(queryFrames: queryFrames)
            goOn = (found.map(\.inliers).max() ?? 0) < MatchThresholds.decisiveInliers
        case .beyond(let stageOne):
            found = stageOne
            // Stage 1's hits again, for the room search to widen (the matcher may have searched
            // other queries in between).
            hits.collect(hypothesis: Self.unchangedSpeed, anchorStride: 1, within: bins.histogram)
            goOn = true
        }
        var elsewhere: [Candidate] = []
        if goOn {
            found += roomSearch(queryFrames: queryFrames)
            // The room search's hits, and the busiest places among them, are set aside for the
            // peak search while the other hypotheses are searched.
            hits.swapHeld()
            searchOtherHypotheses(queryFrames: queryFrames, into: &found)
            hits.swapHeld()
            if found.isEmpty {
                found = peakSearch.lastResort(queryFrames: queryFrames, busiest: peakSearchBins, requiredInliers: requiredInliers)
            } else {
                // Every recording found (`MatchRanking.leading` looks only at those the ranking keeps).
                elsewhere = peakSearch.otherPlaces(in: Set(found.map(\.referenceIndex)), queryFrames: queryFrames,
                                                   busiest: peakSearchBins)
            }
        }
        lastFound = found
        return MatchRanking.leading(MatchRanking.ranked(found), among: found, elsewhere: elsewhere) {
            verification.check($0, queryFrames: queryFrames).score(explained: 0)
        }
    }

    /// Stage 1: unchanged audio, all anchors.
    private func unchangedAudio(queryFrames: Double) -> [Candidate] {
        search.candidates(hypothesis: Self.unchangedSpeed, anchorStride: 1, queryFrames: queryFrames,
                          evidenceFloor: evidenceFloor)
    }

    /// Unchanged audio again, as a room leaves it: a room's echoes build each partial up after its
    /// note starts, so a peak that survives comes a few frames late, each by its own delay, and a
    /// pair's time difference moves by as much. Stage 1's hits are kept and only the wider time
    /// probes are looked up; wider probes let rhythm alone align, so every candidate needs an anchor
    /// more and the reference's own peaks beyond chance. A session's check of the place it follows
    /// (`candidate(_:reference:offset:...)`) does not widen its probes: a place only the room
    /// search finds is followed by the session's next full search instead.
    private func roomSearch(queryFrames: Double) -> [Candidate] {
        search.candidates(hypothesis: Self.unchangedSpeed, anchorStride: 1, queryFrames: queryFrames,
                          evidenceFloor: evidenceFloor, extraInliers: MatchThresholds.roomExtraInliers,
                          frameTolerance: MatchThresholds.roomFrameTolerance, beyond: LandmarkHasher.queryFrameTolerance,
                          peakScore: MatchThresholds.roomScore, listingPlaces: peakSearchBins)
    }

    /// Stages 2 and 3: every other hypothesis with a subsample of anchors and without the
    /// catalog's commonest keys, then the most promising with all of them (`refined`), whose
    /// candidates join `found`.
    private func searchOtherHypotheses(queryFrames: Double, into found: inout [Candidate]) {
        var scored: [(score: Int, hypothesis: Int)] = []
        for h in Self.hypotheses.indices where h != Self.unchangedSpeed {
            let coarse = search.candidates(hypothesis: h, anchorStride: MatchThresholds.coarseAnchorStride,
                                           queryFrames: queryFrames, evidenceFloor: evidenceFloor,
                                           postingLimit: coarsePostingLimit)
            scored.append((coarse.map(\.inliers).max() ?? 0, h))
        }
        for (h, weak) in Self.refined(scored) {
            let extra = weak ? MatchThresholds.weakRefinedExtraInliers : MatchThresholds.refinedExtraInliers
            found += search.candidates(hypothesis: h, anchorStride: 1, queryFrames: queryFrames, evidenceFloor: evidenceFloor,
                                       extraInliers: extra)
        }
    }

    /// The hypotheses stage 3 searches fully, best first, from the coarse stage's scores (the most
    /// aligned anchors of any candidate): the best from `coarseFloor`, the runner-up from
    /// `verificationFloor`. Ties go to the earlier hypothesis. `weak`: ranked on fewer anchors
    /// than `verificationFloor`, so searched for nearly every query that gets this far, and its
    /// candidates need more anchors (`MatchThresholds.weakRefinedExtraInliers`).
    static func refined(_ scored: [(score: Int, hypothesis: Int)]) -> [(hypothesis: Int, weak: Bool)] {
        let coarseFloor = MatchThresholds.coarseFloor, verificationFloor = MatchThresholds.verificationFloor
        let ranked = scored.sorted { $0.score != $1.score ? $0.score > $1.score : $0.hypothesis < $1.hypothesis }
        return ranked.prefix(MatchThresholds.refinedHypotheses).enumerated()
            .filter { rank, s in s.score >= (rank == 0 ? coarseFloor : verificationFloor) }
            .map { ($0.element.hypothesis, $0.element.score < verificationFloor) }
    }

    /// The match the query makes with `reference` at `offset` (reference seconds at the query's
    /// start), searched under the hypothesis nearest `timeScale` and `pitch`; nil when the query does not
    /// support that position. A session following a programme asks this when the best-first
    /// search answers elsewhere: music repeats itself, and a repeat of the same section can
    /// outscore the position playback is really at.
    /// `minimumInliers` may be lower than a match needs: the question is not "which reference"
    /// but "does this position hold too", which chance rarely answers yes at one given offset.
    public func candidate(_ signature: Signature, reference: Int, offset: Double, timeScale: Double, pitch: Double,
                          minimumInliers: Int? = nil) -> Candidate? {
        guard reference >= 0, reference < catalogs.referenceCount, offset.isFinite, timeScale.isFinite, pitch.isFinite
        else { return nil }
        hits.query(signature)
        // A pitch error moves an anchor by up to 255 × the error in bins, a time error a pair's
        // span by up to 63 × the error in frames (and frames are probed more widely): weigh them so.
        func distance(_ h: Hypothesis) -> Double {
            255 * abs(Double(h.pitch) - pitch) + Double(LandmarkHasher.maximumFrameDelta) * abs(Double(h.timeScale) - timeScale)
        }
        let hypotheses = Self.hypotheses
        guard let h = hypotheses.indices.min(by: { distance(hypotheses[$0]) < distance(hypotheses[$1]) }) else { return nil }
        hits.collect(hypothesis: h, anchorStride: 1, within: bins.histogram)
        let hop = FingerprintParameters.hopDuration
        let frames = Double(catalogs.references[reference].startFrame) + offset / hop
        guard frames.magnitude < Double(Int32.max), let bin = bins.histogram.bin(ofOffset: Int(frames.rounded())) else { return nil }
        let queryFrames = signature.duration / hop
        let needed = minimumInliers ?? requiredInliers
        fitter.gather(near: [bin], queryFrames: queryFrames)
        guard let c = fitter.fit(0, hypothesis: h, queryFrames: queryFrames,
                                 minimumInliers: min(needed, MatchThresholds.confirmationFloor)),
              c.referenceIndex == reference, abs(c.offset - offset) <= MatchThresholds.followedPlaceTolerance
        else { return nil }
        if c.inliers >= needed { return c }
        // Fewer anchors: the reference's peaks may still confirm it, as a one-off match would. Not
        // from fewer than `confirmationFloor` (the peak search's places): a session asks this of
        // tails of 2–3 s, for which its threshold is not measured; its next full search finds them.
        // A session checks one given place, not the busiest few of the whole catalog, so the
        // premium on fewest anchors (`MatchThresholds.fewAnchorConfirmationScores`) does not apply.
        verification.signaturePeaks = signature.peaks
        defer { verification.signaturePeaks = [] }
        return verification.confirmed(c, queryFrames: queryFrames, score: MatchThresholds.verificationScore)
    }
}
