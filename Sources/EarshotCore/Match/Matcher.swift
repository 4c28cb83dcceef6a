import RealModule
import FoundationEssentials

/// Finds which references of a catalog a query signature comes from, where, and at what speed
/// and pitch (`SHSession.match`).
///
/// 1. The query's strongest peaks are mapped into reference coordinates under a hypothesis (a
///    speed change, or a pitch shift with the tempo kept) and hashed; each hash's postings vote
///    for an offset bin (reference frame − query frame).
/// 2. The busiest bins become candidates; each candidate's hits are fitted with a line (query time
///    → reference time): its inliers are the evidence, its slope the speed, its intercept the
///    offset; the ratio of query to reference anchor frequencies gives the frequency skew. A
///    candidate with a few inliers too few is checked against the reference's stored peaks
///    (`PeakVerification`): a room breaks most landmarks but leaves single peaks in place.
/// 3. Hypotheses are searched in stages: unchanged audio first (most audio), stopping there on a
///    clear match; otherwise unchanged audio again as a room leaves it (pairs probed over a wider
///    time difference, every candidate checked against the reference's peaks), every other
///    hypothesis with a quarter of the anchors, then the best ones fully. When none of them finds
///    anything, the room search's hits are looked at once more, from 2 aligned anchors, for a
///    place where the reference's own peaks stand far above chance (`peakSearch`): the busiest
///    places, and those where the query's rarer landmarks hit.
/// 4. References are ranked by their evidence; within one, the position that holds clearly more
///    of the reference's peaks leads (a repeat elsewhere can gather as many anchors by chance),
///    among the places the searches found and, by a wider margin, the places in it where the
///    room search's hits still align 2 anchors (`otherPlaces`).
///
/// A matcher owns reusable scratch space: one instance serves one thread at a time.
public final class Matcher {
    public let catalog: MappedCatalog

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
    /// Fewest aligned query anchors that make a match in a catalog of up to a million index
    /// entries (about 10 hours). Chance alignments (same tempo, same instruments) reuse a few
    /// anchors many times; a real match aligns many different ones. Measured on audio not in the
    /// catalog (about 490 queries of people talking, noise, other music, in rooms; benchmarks/RESULTS.md,
    /// Scale): chance reached 7. On held-out music of the catalog's own albums (Recognition, 2500
    /// negatives), with references indexed with more anchors (`LandmarkHasher.referenceFanOut`),
    /// a minimum of 9 let 10 chance alignments through, 10 lets 8, and 11 no fewer.
    public static let minimumInliers = 10
    /// Chance grows with the catalog (more places to align by accident): one more aligned anchor
    /// is required per tenfold index entries beyond a million.
    public static func requiredInliers(entryCount: Int) -> Int {
        var required = minimumInliers, limit = 1_000_000
        while entryCount > limit, limit <= Int.max / 10 {
            required += 1
            limit *= 10
        }
        return required
    }
    /// What this catalog requires (`requiredInliers(entryCount:)`).
    public let requiredInliers: Int
    /// Inliers that end the search at unchanged speed: chance never gets near.
    public static let decisiveInliers = 24

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
    /// Candidates verified per hypothesis, and hypotheses searched fully after the coarse stage.
    static let candidatesPerHypothesis = 4
    static let refinedHypotheses = 2
    /// Aligned anchors (of the coarse stage's quarter) that rank a hypothesis: a speed change
    /// under noise shows only a handful there (benchmarks/RESULTS.md, "The living room", stop 29).
    /// The best hypothesis is searched fully from this many; the runner-up needs
    /// `verificationFloor`, as before: a second full search for nearly every query would cost
    /// more time for little.
    static let coarseFloor = 3
    /// Anchor subsampling in the coarse stage: every fourth anchor ranks the hypotheses as well
    /// as every third did, measured on the living-room conditions, in a quarter less time.
    static let coarseAnchorStride = 4
    /// How far (bins) an inlier's anchor may sit from where the measured pitch ratio puts it:
    /// the fine position is stored to 1/16 bin and peaks jitter by about a tenth of a bin.
    static let binTolerance = 0.3
    /// Stop collecting after this many hits (a pathological catalog must not stall a query).
    static let maximumHits = 1 << 20

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
        /// Found by the peak search alone (`Matcher.peakSearch`): it counts only when nothing else
        /// is found, within one catalog and across the catalogs searched together.
        public var lastResort = false
    }

    /// Fewest inliers a candidate needs without the peak check (from `confirmationFloor` up to
    /// here it needs the check; one more under a hypothesis the coarse stage chose, two under one
    /// it ranked on fewer than `verificationFloor`). The
    /// benchmark's calibration lowers it to see how far chance alignments reach.
    public var evidenceFloor: Int

    /// Every candidate the last `referenceCandidates` found, before ranking: what a `.beyond`
    /// search goes on from (ranking drops positions that `leading` may still prefer).
    public private(set) var lastFound: [Candidate] = []

    private(set) var histogram: OffsetHistogram
    private var queryPeaks: [Peak] = []
    /// Every peak of the query being searched, for `PeakVerification`.
    private var signaturePeaks: [Peak] = []
    // Hits of the hypothesis being searched (structure of arrays).
    private var hitQueryFrame: [Int32] = []
    private var hitReferenceFrame: [Int32] = []
    /// The hit's landmark (index into `landmarkKey`…) << 4 | the posting's fine anchor bin.
    private var hitSource: [UInt32] = []
    private var xs: [Double] = []
    private var ys: [Double] = []
    private var ratios: [Double] = []
    private var candidateHits: [Int] = []
    /// Per candidate offset bin of the hypothesis being searched: the offset (frames) at its
    /// centre and the indices of the hits near it (`gatherHits`).
    private var nearCenters = [Int](repeating: 0, count: candidatesPerHypothesis)
    private var nearHits = [[Int32]](repeating: [], count: candidatesPerHypothesis)
    /// Indices of the bins `gatherHits` was given, in order of their centres.
    private var binsByCenter: [Int] = []
    /// The bins within `drift` of a bin `gatherHits` was given.
    private var nearBins: BinMarks
    private var inlierFrames: [Int32] = []
    // Scratch of `rareLandmarkBins`: the hits of rare landmarks, their weights, the bins kept apart from.
    private var hitWeights: [Float] = []
    private var rareQueryFrame: [Int32] = []
    private var rareReferenceFrame: [Int32] = []
    private var takenBins: [Int] = []
    // Landmarks of the hypothesis being searched, before their postings are read.
    private var landmarkKey: [UInt32] = []
    private var landmarkFrame: [Int32] = []
    private var landmarkQueryBin: [Float] = []
    /// Keys whose postings are brought into cache together (`MappedCatalog.warmPostings`) just
    /// before they are read. All of a search's keys at once (thousands at 100 h) had their first
    /// lines evicted again before they were read; 128–512 keys keep enough reads in flight and
    /// stay in cache. Scale, 100 h, alternated: match p50 / p99 about 22 / 78 → 20 / 71 ms.
    static let warmChunk = 256
    /// One key's hits before they join the hit arrays (`collectHits`): made once, with the matcher.
    private let keyFrames = UnsafeMutableBufferPointer<Int32>.allocate(capacity: MappedCatalog.maximumPostingsPerKey)
    private let keySources = UnsafeMutableBufferPointer<UInt32>.allocate(capacity: MappedCatalog.maximumPostingsPerKey)
    /// What `MappedCatalog.warmPostings` read, kept so its reads are not optimised away.
    private var warmth: UInt32 = 0
    /// What the hits and landmarks held now were collected for (what `beyond` widens).
    private struct Collection: Equatable {
        var hypothesis: Int
        var anchorStride: Int
        var frameTolerance: Float
    }
    private var lastCollection: Collection?
    /// The room search's hits and landmarks, set aside while the other hypotheses are searched
    /// (`swapHeldHits`): the peak search reads them if no stage finds anything.
    private struct HeldHits {
        var queryFrame: [Int32] = [], referenceFrame: [Int32] = [], source: [UInt32] = []
        var landmarkKey: [UInt32] = [], landmarkFrame: [Int32] = [], landmarkQueryBin: [Float] = []
        var places: [Int]?
    }
    private var heldHits = HeldHits()
    /// The `peakSearchBins` busiest offset bins of the hits held now (`twoAnchorPlaces`), when the
    /// search that collected them listed them in its own walk of the histogram: the room search
    /// does, so the peak search and `otherPlaces` do not sort its hits (the most of any search)
    /// a second time. Whatever changes the hits held drops it.
    private var placesOfHits: [Int]?

    /// Exchanges the hits and landmarks held now with those set aside (no copy: the arrays trade
    /// places). Afterwards no search may widen what is held.
    private func swapHeldHits() {
        swap(&hitQueryFrame, &heldHits.queryFrame)
        swap(&hitReferenceFrame, &heldHits.referenceFrame)
        swap(&hitSource, &heldHits.source)
        swap(&landmarkKey, &heldHits.landmarkKey)
        swap(&landmarkFrame, &heldHits.landmarkFrame)
        swap(&landmarkQueryBin, &heldHits.landmarkQueryBin)
        swap(&placesOfHits, &heldHits.places)
        lastCollection = nil
    }
    /// Holds the given hits as if a search had collected them (hit `i`'s landmark is
    /// `sources[i] >> 4`): for tests of the rankings of offset bins.
    func holdHits(queryFrames: [Int32], referenceFrames: [Int32], sources: [UInt32]) {
        hitQueryFrame = queryFrames
        hitReferenceFrame = referenceFrames
        hitSource = sources
        placesOfHits = nil
        lastCollection = nil
    }
    private var lineFit = LineFit()
    /// Per reference, its peak cursors once made (`peakCursors(ofReference:)`).
    private var knownPeakCursors: [[MappedCatalog.PeakCursor]?]

    public init(catalog: MappedCatalog) {
        self.catalog = catalog
        requiredInliers = Self.requiredInliers(entryCount: catalog.entryCount)
        knownPeakCursors = Array(repeating: nil, count: catalog.referenceCount)
        evidenceFloor = requiredInliers
        let margin = Int(2 * catalog.maximumQuerySignatureDuration / FingerprintParameters.hopDuration) + 64
        histogram = OffsetHistogram(timelineFrames: catalog.timelineFrames, margin: margin)
        nearBins = BinMarks(binCount: histogram.binCount)
    }

    deinit {
        keyFrames.deallocate()
        keySources.deallocate()
    }

    /// How far (seconds) a query may pass its catalog's duration limits: window lengths are
    /// whole analysis hops.
    public static let durationSlack = 0.05

    /// One match attempt. Refuses signatures outside the catalog's query duration limits.
    public func match(_ signature: Signature) -> MatchResult {
        let slack = Self.durationSlack
        guard signature.duration + slack >= catalog.minimumQuerySignatureDuration else {
            return .error(.signatureDurationInvalid(
                "query is \(signature.duration.decimalText(places: 2)) s; this catalog needs at least \(catalog.minimumQuerySignatureDuration.decimalText(places: 2)) s"))
        }
        guard signature.duration <= catalog.maximumQuerySignatureDuration + slack else {
            return .error(.signatureDurationInvalid(
                "query is \(signature.duration.decimalText(places: 2)) s; this catalog accepts at most \(catalog.maximumQuerySignatureDuration.decimalText(places: 2)) s"))
        }
        return result(of: referenceCandidates(signature), for: signature)
    }

    /// The media items of `candidates` (from `referenceCandidates` of `signature`), best first.
    public func result(of candidates: [Candidate], for signature: Signature) -> MatchResult {
        var results: [MatchedMediaItem] = []
        for c in candidates {
            let items = catalog.mediaItems(ofReference: c.referenceIndex)
            let duration = catalog.references[c.referenceIndex].duration
            // A query whose end lies past the reference's (the programme ended, or jumped) is
            // placed at the end: nothing of the reference plays later than that.
            let current = min(MatchedMediaItem.offset(c.offset, timeSkew: c.timeScale - 1, after: signature.duration), duration)
            // Time-ranged items follow the current position, as a second screen shows what is on now.
            guard let selected = MediaItemSelection.select(items, offset: current, frequencySkew: c.pitchRatio - 1,
                                                           basicItemID: "reference-\(c.referenceIndex)")
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
    /// when none of them was decisive, as one matcher does over one catalog.
    public func referenceCandidates(_ signature: Signature, depth: SearchDepth = .full) -> [Candidate] {
        signaturePeaks = signature.peaks
        defer { signaturePeaks = [] }
        queryPeaks.removeAll(keepingCapacity: true)
        signature.peaks.withUnsafeBufferPointer {
            PeakSelection.select($0, PeakSelection.query, into: &queryPeaks)
        }
        lastCollection = nil  // another query's hits are never widened
        let queryFrames = signature.duration / FingerprintParameters.hopDuration

        // Stage 1: unchanged speed, all anchors.
        var found: [Candidate]
        var goOn: Bool
        switch depth {
        case .unchangedSpeed:
            found = search(hypothesis: Self.unchangedSpeed, anchorStride: 1, queryFrames: queryFrames)
            goOn = false
        case .full:
            found = search(hypothesis: Self.unchangedSpeed, anchorStride: 1, queryFrames: queryFrames)
            goOn = (found.map(\.inliers).max() ?? 0) < Self.decisiveInliers
        case .beyond(let stageOne):
            found = stageOne
            // Stage 1's hits again, for the room search to widen (the matcher may have searched
            // other queries since).
            collectHits(hypothesis: Self.unchangedSpeed, anchorStride: 1)
            goOn = true
        }
        if goOn {
            // Unchanged speed again, as a room leaves it: echoes make each peak late by its own
            // few frames. Stage 1's hits are kept; only the wider time probes are looked up.
            found += search(hypothesis: Self.unchangedSpeed, anchorStride: 1, queryFrames: queryFrames,
                            extraInliers: Self.roomExtraInliers, frameTolerance: Self.roomFrameTolerance,
                            beyond: LandmarkHasher.queryFrameTolerance, peakScore: Self.roomScore,
                            listingPlaces: true)
            // Its hits are set aside for the peak search, should no stage find anything, with the
            // busiest places among them, listed as it walked them.
            swapHeldHits()
            // Stage 2: every other hypothesis with a subsample of anchors; keep the most promising.
            var scored: [(score: Int, hypothesis: Int)] = []
            for h in Self.hypotheses.indices where h != Self.unchangedSpeed {
                let coarse = search(hypothesis: h, anchorStride: Self.coarseAnchorStride, queryFrames: queryFrames)
                scored.append((coarse.map(\.inliers).max() ?? 0, h))
            }
            // Stage 3: the best hypotheses with all anchors.
            for (h, weak) in Self.refined(scored) {
                found += search(hypothesis: h, anchorStride: 1, queryFrames: queryFrames,
                                extraInliers: weak ? Self.weakRefinedExtraInliers : Self.refinedExtraInliers)
            }
        }
        var elsewhere: [Candidate] = []
        if goOn {
            // The room search's hits again: a last resort when nothing was found, else other
            // places in the references found.
            swapHeldHits()
            if found.isEmpty {
                found = peakSearch(queryFrames: queryFrames)
            } else {
                // Every recording found (`leading` looks only at those the ranking keeps).
                elsewhere = otherPlaces(in: Set(found.map(\.referenceIndex)), queryFrames: queryFrames)
            }
        }
        lastFound = found
        return Self.leading(Self.ranked(found), among: found, elsewhere: elsewhere) {
            peakCheck($0, queryFrames: queryFrames).score(explained: 0)
        }
    }

    /// The hypotheses stage 3 searches fully, best first, from the coarse stage's scores (the most
    /// aligned anchors of any candidate): the best from `coarseFloor`, the runner-up from
    /// `verificationFloor`. Ties go to the earlier hypothesis. `weak`: ranked on fewer anchors
    /// than `verificationFloor` (see `weakRefinedExtraInliers`).
    static func refined(_ scored: [(score: Int, hypothesis: Int)]) -> [(hypothesis: Int, weak: Bool)] {
        let ranked = scored.sorted { $0.score != $1.score ? $0.score > $1.score : $0.hypothesis < $1.hypothesis }
        return ranked.prefix(refinedHypotheses).enumerated()
            .filter { rank, s in s.score >= (rank == 0 ? coarseFloor : verificationFloor) }
            .map { ($0.element.hypothesis, $0.element.score < verificationFloor) }
    }

    /// The query's peaks against the reference's stored peaks where candidate `c` places them.
    private func peakCheck(_ c: Candidate, queryFrames: Double) -> PeakVerification.Result {
        let cursors = peakCursors(ofReference: c.referenceIndex)
        return signaturePeaks.withUnsafeBufferPointer {
            PeakVerification.check($0, queryFrames: Float(queryFrames), catalog: catalog, reference: c.referenceIndex,
                                   offset: c.offset, timeScale: c.timeScale, pitch: c.pitchRatio, cursors: cursors)
        }
    }

    /// What the query finds of the reference's peaks moved a few seconds from candidate `c`
    /// (`PeakVerification.chanceAtShifts`).
    private func chanceAtShifts(_ c: Candidate, queryFrames: Double) -> Double? {
        let cursors = peakCursors(ofReference: c.referenceIndex)
        return signaturePeaks.withUnsafeBufferPointer {
            PeakVerification.chanceAtShifts($0, queryFrames: Float(queryFrames), catalog: catalog, reference: c.referenceIndex,
                                            offset: c.offset, timeScale: c.timeScale, pitch: c.pitchRatio, cursors: cursors)
        }
    }

    /// References with more peak records than this get cursors (`MappedCatalog.peakCursors`): a
    /// shorter one is walked from its start as fast as a cursor is found.
    static let peakCursorThreshold = 4 * MappedCatalog.peakCursorStride

    /// The peak cursors of reference `r`, made the first time a candidate there is checked (one
    /// walk over its peaks) and kept for the matcher's life; none for a short reference.
    private func peakCursors(ofReference r: Int) -> [MappedCatalog.PeakCursor] {
        guard catalog.references[r].peakRecordCount > Self.peakCursorThreshold else { return [] }
        if let known = knownPeakCursors[r] { return known }
        let made = catalog.peakCursors(ofReference: r)
        knownPeakCursors[r] = made
        return made
    }

    /// How much more of the reference's own peaks (standard deviations of chance,
    /// `PeakVerification.Result.score`) another position of a reference must show to lead instead
    /// of the one with most aligned anchors. Near ties are real repeats, which the query alone
    /// cannot tell apart: they keep the anchors' order. Measured on the benchmark (100 queries per
    /// condition): with 2, rooms of RT60 0.3 s went 70 → 75 %, 0.8 s 40 → 43 %, pink noise 55 → 57 %,
    /// pitch −1 semitone 94 → 97 %, nothing lower; with 0, white noise lost 2 points to coin flips
    /// between true repeats; with 3, half the gains went (stop 26). Since the search finds more
    /// places (stops 34–37), 2 left right places scoring 0.2–1.9 above a partial repeat behind it.
    /// On 12 Recognition conditions of both corpora (stop 38, 2400 positives): 1.5 with
    /// `elsewhereMargin` 2.5 led 6 more queries to the right place and 1 away from it (a chance
    /// place); 1 led 9 more and 4 away on the first corpus alone. Scale: rooms and pink noise 1
    /// query more each at both catalog sizes, nothing fewer.
    static let leadMargin = 1.5
    /// The margin a place no search found (`otherPlaces`) needs to lead. Measured on 12
    /// Recognition conditions (stop 35, with `leadMargin` 2): with `leadMargin`, 12 queries more
    /// at the right place and 3 led away from it (partial repeats in rooms); with 3, 9 more and
    /// none led away. Lowered with `leadMargin` in stop 38 (above: 2.5 led 2 more queries to the
    /// right place than 3, none away).
    static let elsewhereMargin = 2.5

    /// Chooses, within each reference `ranked` keeps, which position leads: among every position
    /// of that reference in `found` and `elsewhere`, the one where the query finds most of the
    /// reference's own peaks (`score`), when it beats the ranked leader by `leadMargin` (by
    /// `elsewhereMargin` for a place of `elsewhere`, which no search found); the positions that
    /// score alike follow, ordered by the same measure. Aligned anchors are a coarse count: in a
    /// room or in noise, a repeat that shares most of its notes with the right place can gather
    /// more of them by chance of what survived, while the right place holds more of its peaks
    /// where the query has them. Only references `ranked` keeps are considered, so this changes
    /// where in a reference a match is, never whether there is one, and references keep their
    /// order: the leader carries the best confidence of its reference's places.
    static func leading(_ ranked: [Candidate], among found: [Candidate], elsewhere: [Candidate] = [],
                        score: (Candidate) -> Double) -> [Candidate] {
        var ordered: [Candidate] = []
        var start = 0
        while start < ranked.count {
            var end = start + 1
            while end < ranked.count, ranked[end].referenceIndex == ranked[start].referenceIndex { end += 1 }
            let group = Array(ranked[start..<end])
            start = end
            // Every position of this reference, the ranked ones first, then by aligned anchors
            // (the better fit of a place found both ways; at a tie, the search's, listed first:
            // the sort is stable), each with the margin it needs.
            var positions = group
            var margins = [Double](repeating: leadMargin, count: group.count)
            let others = (found.map { ($0, leadMargin) } + elsewhere.map { ($0, elsewhereMargin) })
                .filter { $0.0.referenceIndex == group[0].referenceIndex }
                .sorted { $0.0.inliers > $1.0.inliers }
            for (c, margin) in others where !positions.contains(where: { abs($0.offset - c.offset) < distinctPositions }) {
                positions.append(c)
                margins.append(margin)
            }
            guard positions.count > 1 else {
                ordered += group
                continue
            }
            let scores = positions.map(score)
            // The best-scoring place among those that beat the ranked leader by their margin.
            let leader = positions.indices.filter { $0 == 0 || scores[$0] >= scores[0] + margins[$0] }
                .max { scores[$0] != scores[$1] ? scores[$0] < scores[$1] : $0 > $1 }!
            var rest = group.indices.filter { abs(group[$0].offset - positions[leader].offset) >= distinctPositions }
            rest.sort { scores[$0] != scores[$1] ? scores[$0] > scores[$1] : $0 < $1 }
            // The reference is matched as surely as its best place says; the leader says where.
            // So what gates on the first item's confidence (a session's jump check, cues) and
            // the ordering of references by confidence see the reference as they did before.
            var lead = positions[leader]
            lead.confidence = group.map(\.confidence).max()!
            ordered.append(lead)
            ordered += rest.map { group[$0] }
        }
        return ordered
    }

    /// Positions of one reference this far apart (seconds) are different places in it.
    static let distinctPositions = 1.0
    /// A second position scores alike when it has this share of the best one's inliers.
    static let alikeShare = 0.75

    /// Candidates as a result lists them: references best first, each reference's best position
    /// followed by its other positions that score alike (music and TV repeat choruses, jingles
    /// and intros: the query alone cannot tell them apart, a session that heard what came
    /// before can). The same position found under two hypotheses counts once, and references
    /// far weaker than the best are dropped (a shared intro matches several equally well).
    static func ranked(_ found: [Candidate]) -> [Candidate] {
        // One group per reference, in the order references first appear; each group's first
        // (best) position leads it.
        var groups: [[Candidate]] = []
        for c in found.sorted(by: { $0.inliers > $1.inliers }) {
            guard let r = groups.firstIndex(where: { $0[0].referenceIndex == c.referenceIndex }) else {
                groups.append([c])
                continue
            }
            if Double(c.inliers) >= Self.alikeShare * Double(groups[r][0].inliers),
               !groups[r].contains(where: { abs($0.offset - c.offset) < Self.distinctPositions }) {
                groups[r].append(c)
            }
        }
        guard let best = groups.first?[0].inliers else { return [] }
        return groups.joined().filter { $0.inliers * 4 >= best }
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
        guard reference >= 0, reference < catalog.referenceCount, offset.isFinite, timeScale.isFinite, pitch.isFinite
        else { return nil }
        queryPeaks.removeAll(keepingCapacity: true)
        signature.peaks.withUnsafeBufferPointer {
            PeakSelection.select($0, PeakSelection.query, into: &queryPeaks)
        }
        // A pitch error moves an anchor by up to 255 × the error in bins, a time error a pair's
        // span by up to 63 × the error in frames (and frames are probed more widely): weigh them so.
        func distance(_ h: Hypothesis) -> Double {
            255 * abs(Double(h.pitch) - pitch) + Double(LandmarkHasher.maximumFrameDelta) * abs(Double(h.timeScale) - timeScale)
        }
        let hypotheses = Self.hypotheses
        guard let h = hypotheses.indices.min(by: { distance(hypotheses[$0]) < distance(hypotheses[$1]) }) else { return nil }
        collectHits(hypothesis: h, anchorStride: 1)
        let hop = FingerprintParameters.hopDuration
        let frames = Double(catalog.references[reference].startFrame) + offset / hop
        guard frames.magnitude < Double(Int32.max), let bin = histogram.bin(ofOffset: Int(frames.rounded())) else { return nil }
        let queryFrames = signature.duration / hop
        let needed = minimumInliers ?? requiredInliers
        gatherHits(near: [bin], queryFrames: queryFrames)
        guard let c = verify(hypothesis: h, hits: 0, queryFrames: queryFrames, minimumInliers: min(needed, Self.confirmationFloor)),
              c.referenceIndex == reference, abs(c.offset - offset) <= 0.5
        else { return nil }
        if c.inliers >= needed { return c }
        // Fewer anchors: the reference's peaks may still confirm it, as a one-off match would. Not
        // from fewer than `confirmationFloor` (the peak search's places): a session asks this of
        // tails of 2–3 s, for which its threshold was not measured; its next full search finds them.
        // A session checks one given place, not the busiest few of the whole catalog, so the
        // premium on fewest anchors (`fewAnchorConfirmationScores`) does not apply.
        signaturePeaks = signature.peaks
        defer { signaturePeaks = [] }
        return confirmed(c, queryFrames: queryFrames, score: Self.verificationScore)
    }

    /// A hypothesis searched fully because the coarse stage ranked it among the best of twenty
    /// gave chance twenty places to look: its candidates need this many more aligned anchors (or
    /// the peak check). Measured: without it, ranking hypotheses by weak coarse evidence found
    /// 2 more chance matches in 2000 negatives; with it, none more, and the same recall.
    static let refinedExtraInliers = 1
    /// A hypothesis searched fully on weaker coarse evidence (`coarseFloor` up to
    /// `verificationFloor`) is searched for nearly every query that gets this far, chance matches
    /// among them: its candidates need one aligned anchor more again. The reference's peaks may
    /// stand in for missing ones since they are measured against chance at other places
    /// (`PeakVerification.chanceAtShifts`; before, two chance matches in 2300 negatives were
    /// confirmed there and the check was not allowed): Recognition, speed +4 % / −3 % in white
    /// noise 5 dB 93 / 95 → 96 / 98 %, chance alignments as before.
    static let weakRefinedExtraInliers = 2

    /// The room search (unchanged speed, after a stage 1 that was not decisive): a room's echoes
    /// build each partial up after its note starts, so a peak that survives comes 1–6 frames
    /// late, each by its own delay, and a pair's time difference moves by as much. Its pairs are
    /// probed over this many frames either side instead of `LandmarkHasher.queryFrameTolerance`.
    static let roomFrameTolerance: Float = 2.0
    /// Wider probes let rhythm alone align (a drum loop at the same tempo in another piece): the
    /// room search's candidates need one aligned anchor more, and every one of them must also
    /// show the reference's own peaks beyond chance (`PeakVerification`), leaving out the peaks
    /// its aligned landmarks account for: those are found by construction, and more of them
    /// align by chance under the wider probes. Measured on the benchmark's queries (Recognition,
    /// 100 per condition): rooms of RT60 0.8 s 38 → 51 %, 0.3 s 76 → 77 %, RT60 0.6 s 50 → 58 %,
    /// chance matches as before. Without the check, chance matches went 2 → 11 of 800 negatives;
    /// with the check counting every found peak (score 10), the Scale calibration found 2 chance
    /// matches among 97 pieces of other music in a room, at 10–13 anchors.
    /// A session's check of the place it follows (`candidate(_:reference:offset:...)`) does not
    /// widen its probes: a place only the room search finds is followed by the session's next
    /// full search instead.
    static let roomExtraInliers = 1
    static let roomScore = 3.0

    /// Collects the hits of one hypothesis and verifies its busiest offset bins: candidates with
    /// `evidenceFloor + extraInliers` aligned anchors, or fewer that the reference's peaks
    /// confirm. The coarse stage (`anchorStride` > 1, a quarter of the anchors) only ranks
    /// hypotheses: there every candidate from `coarseFloor` up counts as it is, since a right
    /// match shows a quarter of its anchors there.
    /// `peakScore`, when given, is asked of every candidate's peak check (the room search), and
    /// its `extraInliers` are taken off the confidence: they make up for anchors the wider probes
    /// align by chance, so a room candidate at the minimum means what a match at the minimum does.
    private func search(hypothesis h: Int, anchorStride: Int, queryFrames: Double, extraInliers: Int = 0,
                        frameTolerance: Float = LandmarkHasher.queryFrameTolerance, beyond inner: Float? = nil,
                        peakScore: Double? = nil, listingPlaces: Bool = false) -> [Candidate] {
        collectHits(hypothesis: h, anchorStride: anchorStride, frameTolerance: frameTolerance, beyond: inner)
        if inner != nil, hitQueryFrame.count >= Self.maximumHits {
            // At the cap, the kept hits crowd out the wider probes': search afresh, as if alone.
            collectHits(hypothesis: h, anchorStride: anchorStride, frameTolerance: frameTolerance)
        }
        let required = evidenceFloor + extraInliers
        let floor = anchorStride > 1 ? Self.coarseFloor : min(required, Self.confirmationFloor)
        // A bin's score counts its neighbours' hits too: one or two say nothing.
        let places = listingPlaces ? peakSearchBins : 0
        let (chosen, listed) = busiestBins(Self.candidatesPerHypothesis, from: max(2, floor / 2), places: places)
        if places > 0 { placesOfHits = listed }
        gatherHits(near: chosen, queryFrames: queryFrames)
        var candidates: [Candidate] = []
        for k in chosen.indices {
            guard var c = verify(hypothesis: h, hits: k, queryFrames: queryFrames, minimumInliers: floor)
            else { continue }
            var check: PeakVerification.Result?
            if let peakScore {
                let result = peakCheck(c, queryFrames: queryFrames)
                guard result.score(explained: c.inliers + c.alignedHits) >= peakScore else { continue }
                check = result
                c.confidence = Self.confidence(inliers: c.inliers - extraInliers, required: requiredInliers)
            }
            if c.inliers >= required || anchorStride > 1 {
                candidates.append(c)
            } else if let confirmed = confirmed(c, queryFrames: queryFrames, check: check) {
                candidates.append(confirmed)
            }
        }
        return candidates
    }

    /// The `count` busiest offset bins of the hits held now, from `minimumScore` up (a bin's
    /// score counts its neighbours' hits too), busiest first; a bin within 2 of a busier one
    /// chosen is the same place and is passed over.
    private func busiestBins(_ count: Int, from minimumScore: Int) -> [Int] {
        busiestBins(count, from: minimumScore, places: 0).chosen
    }

    /// As `busiestBins(_:from:)`, and in the same walk the `places` busiest from `placeScore`
    /// (what `twoAnchorPlaces` looks at; none when `places` is 0).
    private func busiestBins(_ count: Int, from minimumScore: Int, places: Int) -> (chosen: [Int], places: [Int]) {
        var shortlist = BinShortlist<Int>(choosing: count)
        var placeList = BinShortlist<Int>(choosing: places)
        let least = places > 0 ? min(minimumScore, Self.placeScore) : minimumScore
        histogram.forEachBin(queryFrames: hitQueryFrame, referenceFrames: hitReferenceFrame) { bin, score in
            guard score >= least else { return }
            if score >= minimumScore { shortlist.offer(score, bin: bin) }
            if places > 0 { placeList.offer(score, bin: bin) }
        }
        return (shortlist.chosen(), placeList.chosen())
    }

    /// Up to `count` offset bins of the hits held now, none within 2 of a bin in `taken`, ranked
    /// by the hits of rare landmarks (`rareLandmarkHits`) each weighted by 1 / the hits of its
    /// landmark (a landmark that hits everywhere says little about any one place), summed over
    /// bin − 1 … bin + 1 as a bin's hits are; from 2 such hits there, what a fit from 2 anchors
    /// needs (two hits of one anchor pass here and fail the fit).
    func rareLandmarkBins(_ count: Int, apartFrom taken: [Int]) -> [Int] {
        guard count > 0, !hitSource.isEmpty else { return [] }
        var queryFrames = Self.take(&rareQueryFrame), referenceFrames = Self.take(&rareReferenceFrame)
        var weights = Self.take(&hitWeights)
        defer {
            rareQueryFrame = queryFrames
            rareReferenceFrame = referenceFrames
            hitWeights = weights
        }
        // `collectHits` appends each landmark's hits together: a landmark's hits are a run.
        hitSource.withUnsafeBufferPointer { sources in
            hitQueryFrame.withUnsafeBufferPointer { allQueryFrames in
                hitReferenceFrame.withUnsafeBufferPointer { allReferenceFrames in
                    var start = 0
                    while start < sources.count {
                        let landmark = sources[start] >> 4
                        var end = start + 1
                        while end < sources.count, sources[end] >> 4 == landmark { end += 1 }
                        assert(end == sources.count || sources[end] >> 4 > landmark, "a landmark's hits are one run")
                        let hits = end - start
                        if hits <= Self.rareLandmarkHits {
                            queryFrames.append(contentsOf: UnsafeBufferPointer(rebasing: allQueryFrames[start..<end]))
                            referenceFrames.append(contentsOf: UnsafeBufferPointer(rebasing: allReferenceFrames[start..<end]))
                            weights.append(contentsOf: repeatElement(1 / Float(hits), count: hits))
                        }
                        start = end
                    }
                }
            }
        }
        var apart = Self.take(&takenBins)
        defer { takenBins = apart }
        apart.append(contentsOf: taken)
        apart.sort()
        var shortlist = BinShortlist<Double>(choosing: count)
        histogram.forEachBin(queryFrames: queryFrames, referenceFrames: referenceFrames,
                             weights: weights) { bin, hits, weight in
            guard hits >= 2, shortlist.admits(weight, bin: bin) else { return }
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

    /// The busiest offset bins the peak search looks at (`peakSearch`); 0 turns it off, with the
    /// places of rare landmarks (`rareLandmarkPlaces`). The benchmark's calibration does, to see
    /// what aligned anchors alone let through.
    public var peakSearchBins = 64
    /// The least score (hits in a bin and its neighbours) of a bin the peak search looks at: a fit
    /// from 2 anchors needs 2 hits.
    static let placeScore = 2
    /// Places the peak search looks at beyond its `peakSearchBins` busiest: those where the
    /// query's rarer landmarks hit (`rareLandmarkBins`). Over other music at 0 dB, the right place
    /// of a query nothing matched aligned 1–7 anchors and its peaks stood 8–17 standard deviations
    /// above chance, but the other piece's hits buried its bin: 141st to 4911th by hits. Measured
    /// on 12 Recognition conditions of two corpora (1200 positives, 1200 negatives each; stop 36):
    /// 16 more places so ranked found 3 more on the second corpus (other music 87 → 90 %) and
    /// changed nothing on the first; the 64 places ranked so instead of by hits lost 4 there.
    static let rareLandmarkPlaces = 16
    /// The most hits a landmark may have to count in `rareLandmarkBins`. The weights of the others
    /// are small, and they are most hits at 100 h (92 % of the room search's there, 16 % at
    /// 3.3 h): leaving them out took the ranking from 15 % of a 100 h search's time to under 2 %
    /// with the same places found at 3.3 h (12 conditions, both corpora; stop 37).
    static let rareLandmarkHits = 16
    /// How far above chance the reference's peaks must stand where the peak search looks at a
    /// place of 2 or 3 aligned anchors, in standard deviations (`PeakVerification.Result.score`,
    /// against the density's chance and the shifts', as a confirmation): above what a
    /// confirmation asks, since it looks at up to 80 places where a confirmation looks at the
    /// few the anchors chose. Measured on 12 Recognition conditions (1200 positives, 1200
    /// negatives, stop 34): 6 found 14 more, 5 found 21, 4.5 found 24, none with a false positive
    /// more there; 256 places from one aligned anchor brought 3. On a second corpus (stop 36),
    /// 4 negatives' places of 2–3 anchors scored 5.0–5.5.
    static let peakSearchScore = 6.0
    /// From `confirmationFloor` aligned anchors on, the peak search asks this much less per anchor
    /// beyond `confirmationFloor − 1`, down to `peakSearchLeastScore`. The score leaves out the
    /// peaks the aligned landmarks account for, and what a room leaves of the right place is
    /// mostly those: at the right place of every query the search missed in noise, reverb, rooms
    /// and pink noise (stop 35), 5–16 anchors stood with 0–4 more of the reference's peaks. Chance
    /// over the peak search's own places (64 then) falls fast too: in the 787 of 800 negatives nothing
    /// matched (8 conditions), its highest score was 4.2 at 2–3 anchors, 2.7 at 4, 2.0 at 5, 1.9
    /// at 6, 0.6 at 7 and below 0 at 8–9; on the second corpus, 2.9 at 6. So it asks 5 at 4, 4 at
    /// 5, 3 at 6 (what a confirmation asks there), 2 at 7 and 1 from 8 (benchmarks/RESULTS.md,
    /// "The living room", stops 35 and 36, with the schedules measured and not kept).
    static let peakSearchScoreStep = 1.0
    /// The least the peak search asks of any place: above 0, which `confirmed` relies on.
    static let peakSearchLeastScore = 1.0

    /// The score the peak search asks of a place with `inliers` aligned anchors: 6 at 2–3, 5 at 4,
    /// 4 at 5 … 2 at 7, 1 from 8. A catalog that requires more anchors for a match
    /// (`requiredInliers` above `minimumInliers`) moves the schedule as many anchors later.
    static func peakSearchScore(inliers: Int, requiredInliers: Int) -> Double {
        let beyond = anchors(inliers, beyond: confirmationFloor - 1, requiredInliers: requiredInliers)
        return max(peakSearchLeastScore, peakSearchScore - peakSearchScoreStep * Double(beyond))
    }

    /// Where a schedule of scores by aligned anchors stands: `inliers` past `start` (0 at or below
    /// it), counted from as many anchors later as the catalog requires beyond `minimumInliers`
    /// (chance grows with the catalog, `requiredInliers(entryCount:)`).
    static func anchors(_ inliers: Int, beyond start: Int, requiredInliers: Int) -> Int {
        max(0, inliers - start - (requiredInliers - minimumInliers))
    }

    /// The last resort of a query every stage leaves without a candidate: the places where a
    /// room or loud noise left a few anchors, found by the reference's own peaks. Printing the
    /// peak check at the right place of every failed Recognition query in noise, reverb, rooms
    /// and pink noise (stop 34) showed the reference's peaks standing 5 or more standard
    /// deviations above chance there in 75 of 135, most of them with 0–3 aligned anchors: below
    /// what even a confirmation starts from (`confirmationFloor`). So the busiest `peakSearchBins`
    /// offset bins of the room search's hits (unchanged speed, wider probes) are each fitted from 2
    /// aligned anchors at unchanged speed — two or three hits cannot measure a slope, and one
    /// fitted freely between 0.94 and 1.06 misplaced the query's end by up to half a second — and
    /// confirmed by the reference's peaks (`peakSearchScore(inliers:requiredInliers:)`: 6 at 2–3
    /// anchors since stop 36).
    private func peakSearch(queryFrames: Double) -> [Candidate] {
        twoAnchorPlaces(queryFrames: queryFrames).compactMap { c in
            var confirmed = confirmed(c, queryFrames: queryFrames,
                                      score: Self.peakSearchScore(inliers: c.inliers, requiredInliers: requiredInliers))
            confirmed?.lastResort = true
            return confirmed
        }
    }

    /// Other places in `references` (those a result lists) that the room search's hits point to
    /// (`twoAnchorPlaces`). They only compete to lead their reference (`leading`): in a room a
    /// partial repeat can gather more anchors than the right place, which may gather too few to
    /// pass any search. Printed over the queries that found the right recording at the wrong place
    /// in 7 living-room conditions (stop 35), the right place scored 2 or more standard deviations
    /// higher in 12 of 68, and no search had found it.
    private func otherPlaces(in references: Set<Int>, queryFrames: Double) -> [Candidate] {
        twoAnchorPlaces(in: references, queryFrames: queryFrames)
    }

    /// The places the room search's hits (held now) make in up to `peakSearchBins` of their
    /// busiest offset bins and `rareLandmarkPlaces` where their rarer landmarks hit — those in
    /// `references` when given — each fitted from 2 aligned anchors at unchanged speed
    /// (`peakSearch` says why the slope is kept at 1).
    private func twoAnchorPlaces(in references: Set<Int>? = nil, queryFrames: Double) -> [Candidate] {
        guard peakSearchBins > 0 else { return [] }
        var bins = placesOfHits ?? busiestBins(peakSearchBins, from: Self.placeScore)
        // The places listed in the walk of the search that collected the hits are these hits' own.
        assert(placesOfHits == nil || bins == busiestBins(peakSearchBins, from: Self.placeScore),
               "the places listed are not those of the hits held")
        bins += rareLandmarkBins(Self.rareLandmarkPlaces, apartFrom: bins)
        if let references {
            let binWidth = 1 << OffsetHistogram.binShift, margin = histogram.margin
            let catalog = self.catalog
            bins.removeAll {
                // The reference the bin's centre puts the query's middle in, as `verify` places a fit.
                let middle = $0 * binWidth + binWidth / 2 - margin + Int(queryFrames / 2)
                return catalog.referenceIndex(containing: middle).map { !references.contains($0) } ?? true
            }
        }
        gatherHits(near: bins, queryFrames: queryFrames)
        return bins.indices.compactMap { k in
            guard let c = verify(hypothesis: Self.unchangedSpeed, hits: k, queryFrames: queryFrames, minimumInliers: 2,
                                 slopes: 1...1),
                references?.contains(c.referenceIndex) ?? true
            else { return nil }
            return c
        }
    }

    /// Aligned anchors (of the coarse stage's quarter) from which the runner-up hypothesis is
    /// searched fully, and below which the best one counts as weakly ranked (`refined`).
    public static let verificationFloor = 5
    /// Fewest aligned anchors a candidate needs to be checked against the reference's peaks
    /// (`confirmed`). Measured on Recognition's queries with the check against chance at shifts:
    /// from 4 instead of 5, rooms of RT60 0.3 / 0.6 / 0.8 s +4 / +6 / +8 points, pink noise +2;
    /// from 3, a few points more and chance alignments back where they were.
    public static let confirmationFloor = 4
    /// How far beyond chance the reference peaks found must stand, in standard deviations
    /// (`PeakVerification.Result.score`), leaving out the peaks the aligned landmarks already
    /// account for (each anchor, and each aligned hit's target); chance is the larger of what the
    /// query's peak density predicts and what the query finds moved along the reference
    /// (`PeakVerification.chanceAtShifts`). Measured on Recognition's queries (stop 33): from
    /// density alone, other music of the same album scored 7.3–8.2 and was let through at 7,
    /// while right places confirmed scored 7–14; against the shifts, that music scores −0.1 to
    /// 1.5 and 85 of the 86 right places 3 or more (half of them below 6). A search asks more of
    /// a candidate with fewest anchors (`confirmationScore(inliers:requiredInliers:)`) and this
    /// beyond them; a session's check of the place it follows asks this.
    public static let verificationScore = 3.0
    /// What a search's confirmation asks at `confirmationFloor` aligned anchors and at one more.
    /// The chance at the shifts is an average over a passage, and a search confirms the few
    /// busiest places of the whole catalog: music in the same key with the same instruments can
    /// score there above that average. On a second corpus (orchestral, ambient, blues and
    /// electronic albums; benchmarks/RESULTS.md, "The living room", stop 36), 21 of the 27
    /// negatives matched in 2500 were confirmations at 4–5 anchors, 20 of them scoring 3.0–3.7;
    /// right places resting on such a confirmation scored 3.9 or more there (16), and 3.1–4.0 in
    /// 7 of 62 on the first corpus.
    static let fewAnchorConfirmationScores = [4.0, 3.5]

    /// The score a search's confirmation asks of a candidate with `inliers` aligned anchors: 4 at
    /// 4, 3.5 at 5, `verificationScore` from 6. A catalog that requires more anchors for a match
    /// (`requiredInliers` above `minimumInliers`) moves it as many anchors later, as it does
    /// `peakSearchScore(inliers:requiredInliers:)`. The anchors are counted as found: the room
    /// search's and a refined hypothesis's extra anchors are not taken off (measured so).
    static func confirmationScore(inliers: Int, requiredInliers: Int) -> Double {
        let beyond = anchors(inliers, beyond: confirmationFloor, requiredInliers: requiredInliers)
        return beyond < fewAnchorConfirmationScores.count ? fewAnchorConfirmationScores[beyond] : verificationScore
    }

    /// A candidate with fewer aligned anchors than a match needs, confirmed by the reference's own
    /// peaks (`PeakVerification`) standing `score` standard deviations above chance (by default
    /// what a search asks, `confirmationScore(inliers:requiredInliers:)`): a match then, at the
    /// least confidence a match has. `check` is the candidate's peak check when the caller has
    /// already made it.
    private func confirmed(_ c: Candidate, queryFrames: Double, check: PeakVerification.Result? = nil,
                           score: Double? = nil) -> Candidate? {
        let score = score ?? Self.confirmationScore(inliers: c.inliers, requiredInliers: requiredInliers)
        let check = check ?? peakCheck(c, queryFrames: queryFrames)
        let explained = c.inliers + c.alignedHits
        // Chance at the shifts only raises the expectation, which lowers a score above 0: a
        // candidate the density alone turns away (the threshold is above 0) needs no more looks.
        guard check.score(explained: explained) >= score,
              check.withChance(atShifts: chanceAtShifts(c, queryFrames: queryFrames)).score(explained: explained) >= score
        else { return nil }
        var c = c
        c.confidence = Self.confidence(inliers: requiredInliers, required: requiredInliers)
        return c
    }

    /// Collects the hits of hypothesis `h`'s landmarks (every `anchorStride`-th anchor's). With
    /// `beyond`, the hits already collected (this hypothesis, all anchors, time probes of that
    /// tolerance) are kept and only the landmarks the wider `frameTolerance` adds are looked up.
    private func collectHits(hypothesis h: Int, anchorStride: Int, frameTolerance: Float = LandmarkHasher.queryFrameTolerance,
                             beyond inner: Float? = nil) {
        // The hypothesis's landmarks first, then their postings: the catalog's lookups are
        // independent of each other, so `warmPostings` brings them into cache `warmChunk` keys at
        // a time instead of one cache miss after another (see `MappedCatalog.warmPostings`).
        let extending = inner != nil
        precondition(!extending || lastCollection == Collection(hypothesis: h, anchorStride: anchorStride, frameTolerance: inner!),
                     "a search widens only the one just made")
        lastCollection = Collection(hypothesis: h, anchorStride: anchorStride, frameTolerance: frameTolerance)
        placesOfHits = nil
        var keys = Self.take(&landmarkKey, keeping: extending), frames = Self.take(&landmarkFrame, keeping: extending)
        var bins = Self.take(&landmarkQueryBin, keeping: extending)
        let first = keys.count
        defer {
            landmarkKey = keys
            landmarkFrame = frames
            landmarkQueryBin = bins
        }
        let hypothesis = Self.hypotheses[h]
        queryPeaks.withUnsafeBufferPointer { peaks in
            LandmarkHasher.forEachQueryLandmark(peaks, fanOut: LandmarkHasher.queryFanOut,
                                                timeScale: hypothesis.timeScale, pitch: hypothesis.pitch,
                                                frameTolerance: frameTolerance, beyond: inner,
                                                anchorStride: anchorStride) { lm, anchor in
                keys.append(lm.key)
                frames.append(lm.frame)
                bins.append(peaks[anchor].bin)
            }
        }
        let catalog = self.catalog

        // The loop works on locals moved out of the matcher (and back after): mutating stored
        // properties from inside closures costs a dynamic exclusivity check per access.
        var queryFrames = Self.take(&hitQueryFrame, keeping: extending)
        var referenceFrames = Self.take(&hitReferenceFrame, keeping: extending)
        var sources = Self.take(&hitSource, keeping: extending)
        defer {
            hitQueryFrame = queryFrames
            hitReferenceFrame = referenceFrames
            hitSource = sources
        }
        let histogram = self.histogram
        var warm: UInt32 = 0
        defer { warmth &+= warm }
        // A key's hits go to scratch first and join the arrays in one append each: an append per
        // hit paid a uniqueness check and a capacity check per array.
        let keyFrames = self.keyFrames, keySources = self.keySources
        for l in first..<keys.count {
            guard queryFrames.count < Self.maximumHits else { break }
            if (l - first) % Self.warmChunk == 0 {
                let end = min(keys.count, l + Self.warmChunk)
                warm &+= keys.withUnsafeBufferPointer { catalog.warmPostings(of: UnsafeBufferPointer(rebasing: $0[l..<end])) }
            }
            let queryFrame = frames[l], source = UInt32(l) << 4
            var found = 0
            catalog.forEachPosting(of: keys[l]) { value in
                let frame = Int32(value >> 4)
                guard found < keyFrames.count, histogram.bin(ofOffset: Int(frame) - Int(queryFrame)) != nil else { return }
                keyFrames[found] = frame
                keySources[found] = source | value & 15
                found += 1
            }
            guard found > 0 else { continue }
            queryFrames.append(contentsOf: repeatElement(queryFrame, count: found))
            referenceFrames.append(contentsOf: UnsafeBufferPointer(rebasing: keyFrames[0..<found]))
            sources.append(contentsOf: UnsafeBufferPointer(rebasing: keySources[0..<found]))
        }
    }

    /// The query's anchor bin of hit `i` (of the hypothesis being searched).
    @inline(__always)
    private func queryBin(ofHit i: Int) -> Double {
        Double(landmarkQueryBin[Int(hitSource[i] >> 4)])
    }

    /// The reference's anchor bin of hit `i`, to 1/16 bin.
    @inline(__always)
    private func referenceBin(ofHit i: Int) -> Double {
        let source = hitSource[i]
        return Double(LandmarkHasher.anchorBin(key: landmarkKey[Int(source >> 4)], fineBin: UInt8(source & 15)))
    }

    /// Moves an array out of a stored property, emptied (unless `keeping`) but keeping its capacity.
    private static func take<T>(_ array: inout [T], keeping: Bool = false) -> [T] {
        var taken: [T] = []
        swap(&taken, &array)
        if !keeping { taken.removeAll(keepingCapacity: true) }
        return taken
    }

    /// How far (frames) a match's hits may lie from its offset bin's centre: a tempo drift of up
    /// to 7 % over the query spreads them over several bins.
    private static func drift(queryFrames: Double) -> Int {
        Int(0.07 * queryFrames) + 2 * (1 << OffsetHistogram.binShift)
    }

    /// Sorts out, in one pass over the hits, those within `drift` of each of `bins`:
    /// `nearHits[k]` for `bins[k]`, whose centre offset is `nearCenters[k]`. A hit whose own bin
    /// is near none of them (most hits) is passed over at one look at `nearBins`; the others find
    /// the few bins they are near by bisection over the bins in order of their centres (the peak
    /// search gathers for up to 80 bins at once).
    private func gatherHits(near bins: [Int], queryFrames: Double) {
        let binWidth = 1 << OffsetHistogram.binShift
        let drift = Self.drift(queryFrames: queryFrames)
        while nearHits.count < bins.count {
            nearHits.append([])
            nearCenters.append(0)
        }
        for k in nearHits.indices { nearHits[k].removeAll(keepingCapacity: true) }
        guard !bins.isEmpty else { return }
        for k in bins.indices { nearCenters[k] = bins[k] * binWidth + binWidth / 2 - histogram.margin }
        let centers = nearCenters
        var order = Self.take(&binsByCenter)
        defer { binsByCenter = order }
        order.append(contentsOf: bins.indices)
        order.sort { centers[$0] != centers[$1] ? centers[$0] < centers[$1] : $0 < $1 }
        let margin = histogram.margin, shift = OffsetHistogram.binShift
        for c in centers.prefix(bins.count) { nearBins.mark(((c - drift + margin) >> shift)...((c + drift + margin) >> shift)) }
        defer { nearBins.clear() }
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

    /// The candidate the hits of `nearHits[k]` make, if it has `minimumInliers`.
    private func verify(hypothesis: Int, hits k: Int, queryFrames: Double, minimumInliers: Int,
                        slopes: ClosedRange<Double> = 0.94...1.06) -> Candidate? {
        xs.removeAll(keepingCapacity: true)
        ys.removeAll(keepingCapacity: true)
        candidateHits.removeAll(keepingCapacity: true)
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
            ratios.append(queryBin(ofHit: i) / referenceBin(ofHit: i))
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
            if abs(queryBin(ofHit: i) / pitch - referenceBin(ofHit: i)) <= Self.binTolerance {
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
        let timeScale = Double(Self.hypotheses[hypothesis].timeScale)
        let hop = FingerprintParameters.hopDuration
        return Candidate(
            referenceIndex: reference,
            offset: (line.intercept - Double(catalog.references[reference].startFrame)) * hop,
            timeScale: line.slope * timeScale, pitchRatio: pitch, inliers: inliers,
            confidence: Self.confidence(inliers: inliers, required: requiredInliers), alignedHits: aligned)
    }

    /// Maps aligned-anchor counts to 0…1: chance alignments give a handful of inliers, a real
    /// match of a few seconds gives tens. A catalog that requires more inliers (a larger one)
    /// shifts the scale by as many, so a confidence means the same margin over chance at any
    /// size: the least a match can have is 0.46. Calibrated with the benchmark's audio that is
    /// not in the catalog (benchmarks/RESULTS.md, "Confidence calibration").
    public static func confidence(inliers: Int, required: Int) -> Double {
        max(0, min(1, 1 - Double.exp(-Double(inliers - required + 5) / 8)))
    }
}
