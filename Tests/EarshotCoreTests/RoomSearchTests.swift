import EarshotTestSupport
import Foundation
import Testing

@testable import EarshotCore

/// The room search (`Matcher.roomFrameTolerance`): in a room each surviving peak comes late by
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
}
