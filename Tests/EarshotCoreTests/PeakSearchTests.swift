import EarshotTestSupport
import Foundation
import Testing

@testable import EarshotCore

/// The peak search (`PeakSearch`): the last resort of a query whose landmarks a room or
/// loud noise broke, found where the reference's own peaks stand far above chance although only
/// a few anchors (from 2) align there.
struct PeakSearchTests {
    let fixture = MatchingFixture.shared

    private func isRight(_ result: MatchResult, reference: Int, start: Double) -> Bool {
        guard let top = result.mediaItems.first else { return false }
        return top.referenceIndex == reference && abs(top.matchOffset - start) < 0.05
    }

    @Test func queriesWithFewAnchorsLeftAreFoundAtTheirPlace() throws {
        let matcher = Matcher(catalog: fixture.catalog)
        let withoutSearch = Matcher(catalog: fixture.catalog)
        withoutSearch.peakSearchBins = 0
        var before = 0, after = 0, fromFewAnchors = 0
        let queries = 24
        for seed in 1...UInt64(queries) {
            let reference = Int(seed % 4), start = 2 + Double(seed % 15)
            let clean = try SyntheticSignature.of(SyntheticSignature.excerpt(fixture.audio[reference], start: start, duration: 10))
            // A landmark needs both of its peaks: an eighth of the peaks keeps about a seventieth of the landmarks.
            let query = try SyntheticSignature.thinned(clean, keeping: 0.12, seed: seed)
            if isRight(withoutSearch.match(query), reference: reference, start: start) { before += 1 }
            let result = matcher.match(query)
            // Whatever it finds is the right place, at the least confidence a match has.
            if let top = result.mediaItems.first {
                #expect(isRight(result, reference: reference, start: start), "seed \(seed): reference \(top.referenceIndex) at \(top.matchOffset)")
            }
            if isRight(result, reference: reference, start: start) {
                after += 1
                if let best = matcher.referenceCandidates(query).first, best.inliers < Matcher.confirmationFloor {
                    fromFewAnchors += 1
                    #expect(abs(best.confidence - Matcher.confidence(inliers: matcher.requiredInliers, required: matcher.requiredInliers)) < 1e-9)
                    #expect(best.lastResort)
                }
            }
        }
        #expect(after >= before + queries / 6, "with the peak search \(after) of \(queries), without \(before)")
        #expect(before >= 1, "the thinned queries are not all beyond the other searches")
        #expect(fromFewAnchors >= queries / 6, "\(fromFewAnchors) found from fewer than \(Matcher.confirmationFloor) anchors")
    }

    /// A matcher keeps the room search's hits, and the places listed from them, while it searches
    /// the other hypotheses (`HitCollector.listedPlaces`): what one query left must never be what the
    /// next one's peak search looks at. A matcher that served other queries before answers each
    /// query as a new one does.
    @Test func aMatcherAnswersAsANewOneAfterOtherQueries() throws {
        let reused = Matcher(catalog: fixture.catalog)
        var thinnedFound = 0
        for seed in 1...UInt64(12) {
            let reference = Int(seed % 4), start = 3 + Double(seed % 11)
            let clean = try SyntheticSignature.of(SyntheticSignature.excerpt(fixture.audio[reference], start: start, duration: 10))
            // Thinned ones reach the peak search; clean ones end at the first search.
            for query in [try SyntheticSignature.thinned(clean, keeping: 0.12, seed: seed), clean] {
                let fresh = Matcher(catalog: fixture.catalog).referenceCandidates(query)
                let again = reused.referenceCandidates(query)
                #expect(fresh.map(\.referenceIndex) == again.map(\.referenceIndex), "seed \(seed)")
                #expect(fresh.map(\.offset) == again.map(\.offset), "seed \(seed)")
                #expect(fresh.map(\.inliers) == again.map(\.inliers), "seed \(seed)")
                if query.peaks.count < clean.peaks.count, fresh.first?.lastResort == true { thinnedFound += 1 }
            }
        }
        #expect(thinnedFound >= 2, "only \(thinnedFound) thinned queries were found by the peak search")
    }

    /// The places of rare landmarks (`BinRanking.rareLandmarkBins`): hits weighted by 1 / their
    /// landmark's hits, only landmarks of at most `rareLandmarkHits`, from 2 hits, away from the
    /// bins taken.
    @Test func rareLandmarksRankThePlacesTheyPointTo() throws {
        let matcher = Matcher(catalog: fixture.catalog)
        let width = 1 << OffsetHistogram.binShift
        try #require(matcher.catalog.timelineFrames > 400 * width)
        var queryFrames: [Int32] = [], referenceFrames: [Int32] = [], sources: [UInt32] = []
        var landmark: UInt32 = 0, spare = 60
        /// One landmark: one hit at each bin of `at`, the rest of its `hits` alone, 3 bins apart.
        func add(hits: Int, at bins: [Int] = []) {
            for k in 0..<hits {
                let bin: Int
                if k < bins.count { bin = bins[k] } else { bin = spare; spare += 3 }
                queryFrames.append(Int32(landmark) * 4)
                referenceFrames.append(Int32(landmark) * 4 + Int32(bin * width + width / 2))
                sources.append(landmark << 4)
            }
            landmark += 1
        }
        add(hits: 40, at: [10, 20, 30, 40, 50])            // everywhere: not rare
        add(hits: 1, at: [10]); add(hits: 1, at: [10])      // bin 10: weight 2
        for _ in 0..<3 { add(hits: 3, at: [20]) }            // bin 20: weight 3 × 1/3
        add(hits: 1, at: [25])                               // one hit: no fit
        add(hits: 1, at: [30]); add(hits: 1, at: [30])      // bin 30: near a bin taken
        add(hits: MatchThresholds.rareLandmarkHits + 1, at: [40])   // bin 40: landmarks just too common
        add(hits: MatchThresholds.rareLandmarkHits + 1, at: [40])
        add(hits: MatchThresholds.rareLandmarkHits, at: [50])       // bin 50: weight 2 / 16
        add(hits: MatchThresholds.rareLandmarkHits, at: [50])
        try #require(spare < 400)
        matcher.hits.hold(queryFrames: queryFrames, referenceFrames: referenceFrames, sources: sources)
        let bin = { (b: Int) in matcher.bins.histogram.bin(ofOffset: b * width + width / 2)! }
        #expect(matcher.bins.rareLandmarkBins(4, apartFrom: [bin(30) + 2]) == [bin(10), bin(20), bin(50)])
        #expect(matcher.bins.rareLandmarkBins(2, apartFrom: [bin(30) + 2]) == [bin(10), bin(20)])
        #expect(matcher.bins.rareLandmarkBins(4, apartFrom: [bin(10) - 2, bin(50) + 1]) == [bin(30), bin(20)])
        #expect(matcher.bins.rareLandmarkBins(0, apartFrom: []).isEmpty)
    }

    /// A query another stage finds never gets a place of the peak search: it is a last resort.
    @Test func aQueryFoundOtherwiseHasNoLastResort() throws {
        let matcher = Matcher(catalog: fixture.catalog)
        for seed in UInt64(1)...UInt64(8) {
            let clean = try SyntheticSignature.of(SyntheticSignature.excerpt(fixture.audio[Int(seed % 4)], start: 3, duration: 10))
            for query in [clean, try SyntheticSignature.thinned(clean, keeping: 0.5, seed: seed)] {
                let found = matcher.referenceCandidates(query)
                #expect(!found.isEmpty)
                #expect(!found.contains { $0.lastResort })
            }
        }
    }

    /// Unrelated music, whole or thinned like the queries above, is found nowhere: up to 80
    /// places looked at per query, none of them above the peak search's threshold.
    @Test func unrelatedAudioIsFoundNowhere() throws {
        let matcher = Matcher(catalog: fixture.catalog)
        for seed in UInt64(800)..<UInt64(808) {
            let whole = try SyntheticSignature.of(SyntheticMusic.make(seed: seed, duration: 10))
            let fewer = try SyntheticSignature.thinned(whole, keeping: 0.12, seed: seed)
            let some = try SyntheticSignature.thinned(whole, keeping: 0.3, seed: seed)
            for query in [whole, fewer, some] {
                let result = matcher.match(query)
                #expect(result.mediaItems.isEmpty, "seed \(seed): \(result.mediaItems.map(\.mediaItem.id))")
            }
        }
    }

    /// The score asked of a place falls with its aligned anchors from 4 on, down to a floor above
    /// 0; a larger catalog moves the schedule one anchor later per anchor it requires more.
    @Test func theScoreAskedFallsWithTheAnchorsAndRisesWithTheCatalog() {
        let confirmation = Matcher.confirmationFloor, minimum = Matcher.minimumInliers
        #expect(MatchThresholds.peakSearchScore(inliers: 2, requiredInliers: minimum) == MatchThresholds.peakSearchScore)
        #expect(MatchThresholds.peakSearchScore(inliers: confirmation - 1, requiredInliers: minimum) == MatchThresholds.peakSearchScore)
        // At the anchors a confirmation starts from, more than it asks (80 places, not a few)…
        #expect(MatchThresholds.peakSearchScore(inliers: confirmation, requiredInliers: minimum) == 5.5)
        #expect(MatchThresholds.peakSearchScore(inliers: confirmation + 1, requiredInliers: minimum) == 5)
        for inliers in confirmation...(confirmation + 1) {
            #expect(MatchThresholds.peakSearchScore(inliers: inliers, requiredInliers: minimum)
                > MatchThresholds.confirmationScore(inliers: inliers, requiredInliers: minimum))
        }
        // … 3 at 6, as much as a confirmation asks there, and the floor from 8.
        #expect(MatchThresholds.peakSearchScore(inliers: 6, requiredInliers: minimum)
            == MatchThresholds.confirmationScore(inliers: 6, requiredInliers: minimum))
        #expect(MatchThresholds.peakSearchScore(inliers: 8, requiredInliers: minimum) == MatchThresholds.peakSearchLeastScore)
        var previous = Double.infinity
        for inliers in 2...40 {
            let score = MatchThresholds.peakSearchScore(inliers: inliers, requiredInliers: minimum)
            #expect(score <= previous)
            #expect(score >= MatchThresholds.peakSearchLeastScore)
            // One tenfold larger catalog: one anchor more for the same score.
            #expect(MatchThresholds.peakSearchScore(inliers: inliers + 1, requiredInliers: minimum + 1) == score)
            previous = score
        }
        #expect(MatchThresholds.peakSearchScore(inliers: 40, requiredInliers: minimum) == MatchThresholds.peakSearchLeastScore)
        // `confirmed` skips the shifts' look when the density alone turns a place away: sound
        // only while every threshold is above 0.
        #expect(MatchThresholds.peakSearchLeastScore > 0)
    }

    /// A search's confirmation asks most of a candidate with fewest anchors (5 at 4, 4.5 at 5),
    /// from 6 on what a session's check always asks, and a larger catalog moves that one anchor
    /// later per anchor it requires more.
    @Test func aConfirmationAsksMoreOfFewerAnchors() {
        let confirmation = Matcher.confirmationFloor, minimum = Matcher.minimumInliers
        #expect(MatchThresholds.confirmationScore(inliers: confirmation, requiredInliers: minimum) == 5)
        #expect(MatchThresholds.confirmationScore(inliers: confirmation + 1, requiredInliers: minimum) == 4.5)
        #expect(MatchThresholds.confirmationScore(inliers: confirmation + 2, requiredInliers: minimum) == Matcher.verificationScore)
        var previous = Double.infinity
        for inliers in confirmation...30 {
            let score = MatchThresholds.confirmationScore(inliers: inliers, requiredInliers: minimum)
            #expect(score <= previous)
            #expect(score >= Matcher.verificationScore)
            #expect(MatchThresholds.confirmationScore(inliers: inliers + 1, requiredInliers: minimum + 1) == score)
            previous = score
        }
        // In a larger catalog, the floor's score is still the most asked.
        #expect(MatchThresholds.confirmationScore(inliers: confirmation, requiredInliers: minimum + 1) == 5)
        #expect(Matcher.verificationScore > 0)
    }
}
