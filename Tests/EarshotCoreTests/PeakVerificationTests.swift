import EarshotTestSupport
import Foundation
import Testing

@testable import EarshotCore

/// Checking a candidate against the reference's own peaks (`PeakVerification`) and the matches
/// it confirms when too few landmarks survive.
struct PeakVerificationTests {
    let fixture = MatchingFixture.shared

    /// The query's peaks, keeping each with probability `share` (seeded): a room that leaves
    /// a peak here and there breaks most landmarks, since a landmark needs both of its peaks.
    private func thinned(_ signature: Signature, keeping share: Double, seed: UInt64) throws -> Signature {
        var random = SeededRandom(seed: seed)
        return try Signature(duration: signature.duration, peaks: signature.peaks.filter { _ in random.unit() < share })
    }

    @Test func storedPeaksAreReadInPlaceByTime() throws {
        let stored = try fixture.catalog.signature(ofReference: 1).peaks
        var walked: [(Float, Float)] = []
        fixture.catalog.forEachPeak(ofReference: 1, in: 500...1000) { walked.append(($0, $1)) }
        let expected = stored.filter { $0.time >= 500 && $0.time <= 1000 }
        #expect(walked.count == expected.count && !walked.isEmpty)
        #expect(zip(walked, expected).allSatisfy { $0.0 == $1.time && $0.1 == $1.bin })
    }

    /// At the right place nearly every reference peak is found; 2 s away, about what chance
    /// predicts.
    @Test func rightPlaceFindsTheReferencePeaksAndAWrongOneChance() throws {
        let query = try SyntheticSignature.of(SyntheticSignature.excerpt(fixture.audio[1], start: 8, duration: 10))
        let frames = Float(query.duration / FingerprintParameters.hopDuration)
        func check(_ offset: Double) -> PeakVerification.Result {
            query.peaks.withUnsafeBufferPointer {
                PeakVerification.check($0, queryFrames: frames, catalog: fixture.catalog, reference: 1,
                                       offset: offset, timeScale: 1, pitch: 1)
            }
        }
        let right = check(8), wrong = check(10)
        #expect(right.referencePeaks > 50)
        #expect(Double(right.found) > 0.9 * Double(right.referencePeaks))
        #expect(right.score(explained: 0) > 20)
        #expect(wrong.referencePeaks > 50)
        #expect(Double(wrong.found) < 3 * wrong.expected + 5)
        #expect(wrong.score(explained: 0) < 5)
    }

    /// A query that kept a fifth of its peaks keeps about a twenty-fifth of its landmarks: often
    /// too few aligned anchors for a match, but the reference's peaks confirm it.
    @Test func aQueryWithFewLandmarksLeftIsConfirmedByTheReferencePeaks() throws {
        let matcher = Matcher(catalog: fixture.catalog)
        var confirmed = 0
        for seed in UInt64(1)...UInt64(24) {
            let clean = try SyntheticSignature.of(SyntheticSignature.excerpt(fixture.audio[3], start: 6, duration: 10))
            let query = try thinned(clean, keeping: 0.2, seed: seed)
            let strongest = matcher.referenceCandidates(query).first
            let top = matcher.match(query).mediaItems.first
            if let top {
                #expect(top.mediaItem.id == "ref3")
                #expect(abs(top.matchOffset - 6) < 0.05)
            }
            // Found with fewer anchors than a match needs: only the peak check can have let it through.
            if let strongest, strongest.inliers < matcher.requiredInliers, top != nil {
                confirmed += 1
                #expect(abs(top!.confidence - Matcher.confidence(inliers: matcher.requiredInliers, required: matcher.requiredInliers)) < 1e-9)
            }
        }
        #expect(confirmed >= 3)
    }

    /// Unrelated audio thinned the same way finds nothing to confirm.
    @Test func unrelatedThinnedAudioIsNotConfirmed() throws {
        let matcher = Matcher(catalog: fixture.catalog)
        for seed in UInt64(700)..<UInt64(706) {
            let query = try thinned(try SyntheticSignature.of(SyntheticMusic.make(seed: seed, duration: 10)), keeping: 0.3, seed: seed)
            #expect(matcher.match(query).mediaItems.isEmpty)
        }
    }
}
