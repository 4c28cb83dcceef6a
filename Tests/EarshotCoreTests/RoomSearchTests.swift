import EarshotTestSupport
import Foundation
import Testing

@testable import EarshotCore

/// The room search (`MatchThresholds.roomFrameTolerance`): in a room each surviving peak comes late by
/// its own few frames, so the time between a pair's peaks moves by up to as much, and the
/// landmarks of unchanged audio probed within one frame miss most pairs.
struct RoomSearchTests {
    let fixture = MatchingFixture.shared
    let matcher = Matcher(catalog: MatchingFixture.shared.catalog)

    /// `signature`'s peaks, each made late by its own 0–5 frames, and 70 % of them lost (seeded).
    private func echoed(_ signature: Signature, seed: UInt64) throws -> Signature {
        var random = SeededRandom(seed: seed)
        let peaks = signature.peaks.compactMap { p -> Peak? in
            let kept = random.unit() < 0.3
            let delay = Float(random.unit() * 5)
            return kept ? Peak(time: p.time + delay, bin: p.bin, magnitude: p.magnitude) : nil
        }
        return try Signature(duration: signature.duration, peaks: peaks.sorted { $0.time < $1.time })
    }

    private func right(_ c: Matcher.Candidate?, start: Double) -> Bool {
        guard let c else { return false }
        return c.referenceIndex == 2 && abs(c.offset - start) < 0.1
    }

    @Test func echoDelayedQueriesAreFoundByTheRoomSearch() throws {
        var plain = 0, withRoom = 0
        let queries = 20
        for seed in 1...UInt64(queries) {
            let start = 3 + Double(seed % 12)
            let clean = try SyntheticSignature.of(SyntheticSignature.excerpt(fixture.audio[2], start: start, duration: 10))
            let query = try echoed(clean, seed: seed)
            // Unchanged speed only: the search before the room search.
            if right(matcher.referenceCandidates(query, depth: .unchangedSpeed).first, start: start) { plain += 1 }
            if right(matcher.referenceCandidates(query).first, start: start) { withRoom += 1 }
            // Whatever it finds is the right place: the room search adds no wrong reference.
            if case .match(let items) = matcher.match(query) {
                #expect(items[0].mediaItem.id == "ref2", "seed \(seed)")
            }
        }
        #expect(withRoom >= plain + queries / 5, "room search \(withRoom) of \(queries), unchanged speed alone \(plain)")
        #expect(withRoom >= queries * 7 / 10, "room search \(withRoom) of \(queries)")
    }

    /// The room search widens stage 1's probes without looking them up again: the landmarks
    /// it adds (`beyond`) and stage 1's are, together, exactly the wider search's, none twice.
    @Test func widenedProbesAddOnlyWhatTheNarrowOnesMissed() throws {
        let query = try echoed(try SyntheticSignature.of(SyntheticSignature.excerpt(fixture.audio[2], start: 4, duration: 10)), seed: 3)
        func landmarks(_ tolerance: Float, beyond inner: Float? = nil) -> [String: Int] {
            var all: [String: Int] = [:]
            query.peaks.withUnsafeBufferPointer {
                LandmarkHasher.forEachQueryLandmark($0, fanOut: LandmarkHasher.queryFanOut, timeScale: 1, pitch: 1,
                                                    frameTolerance: tolerance, beyond: inner) { lm, anchor in
                    all["\(lm.key) \(lm.frame) \(anchor)", default: 0] += 1
                }
            }
            return all
        }
        let narrow = landmarks(LandmarkHasher.queryFrameTolerance)
        let added = landmarks(MatchThresholds.roomFrameTolerance, beyond: LandmarkHasher.queryFrameTolerance)
        let wide = landmarks(MatchThresholds.roomFrameTolerance)
        #expect(!added.isEmpty && !narrow.isEmpty)
        #expect(Set(added.keys).isDisjoint(with: narrow.keys))
        #expect(narrow.merging(added, uniquingKeysWith: +) == wide)
    }

    /// A search that goes on from a stage 1 made earlier (`.beyond`, as several catalogs are
    /// searched) finds what the full search does, even when the matcher searched another query
    /// in between.
    @Test func goingOnFromAnEarlierStageOneFindsWhatTheFullSearchDoes() throws {
        for seed in 1...UInt64(6) {
            let start = 3 + Double(seed % 12)
            let query = try echoed(try SyntheticSignature.of(SyntheticSignature.excerpt(fixture.audio[2], start: start, duration: 10)),
                                   seed: seed)
            let other = try SyntheticSignature.of(SyntheticSignature.excerpt(fixture.audio[1], start: start, duration: 10))
            let full = matcher.referenceCandidates(query)
            _ = matcher.referenceCandidates(query, depth: .unchangedSpeed)
            let stageOne = matcher.lastFound
            _ = matcher.referenceCandidates(other)
            let beyond = matcher.referenceCandidates(query, depth: .beyond(stageOne))
            #expect(beyond.map(\.referenceIndex) == full.map(\.referenceIndex), "seed \(seed)")
            #expect(beyond.map(\.inliers) == full.map(\.inliers), "seed \(seed)")
            #expect(zip(beyond, full).allSatisfy { abs($0.offset - $1.offset) < 1e-6 }, "seed \(seed)")
        }
    }
}
