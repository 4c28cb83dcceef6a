import EarshotTestSupport
import Foundation
import Testing

@testable import EarshotCore

/// Checking a candidate against the reference's own peaks (`PeakVerification`) and the matches
/// it confirms when too few landmarks survive.
struct PeakVerificationTests {
    let fixture = MatchingFixture.shared

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
            let query = try SyntheticSignature.thinned(clean, keeping: 0.2, seed: seed)
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

    /// The check a confirmation makes: against the larger of the density's chance and what the
    /// query finds moved along the reference (`PeakVerification.chanceAtShifts`).
    private func confirmationCheck(_ query: Signature, reference: Int, offset: Double) -> (density: PeakVerification.Result, shifted: PeakVerification.Result) {
        let frames = Float(query.duration / FingerprintParameters.hopDuration)
        return query.peaks.withUnsafeBufferPointer {
            let density = PeakVerification.check($0, queryFrames: frames, catalog: fixture.catalog, reference: reference,
                                                 offset: offset, timeScale: 1, pitch: 1)
            let rate = PeakVerification.chanceAtShifts($0, queryFrames: frames, catalog: fixture.catalog, reference: reference,
                                                       offset: offset, timeScale: 1, pitch: 1)
            return (density, density.withChance(atShifts: rate))
        }
    }

    /// Unrelated music checked against every reference at many places scores below what a
    /// confirmation needs. A candidate checked there would have at least `confirmationFloor`
    /// aligned anchors, each with an aligned target, whose peaks are set aside as found.
    @Test func unrelatedAudioStaysBelowTheThreshold() throws {
        var best = -Double.infinity
        for seed in UInt64(700)..<UInt64(704) {
            let query = try SyntheticSignature.of(SyntheticMusic.make(seed: seed, duration: 10))
            for reference in 0..<4 {
                for offset in stride(from: 0.0, through: 18, by: 1.5) {
                    let check = confirmationCheck(query, reference: reference, offset: offset).shifted
                    #expect(check.referencePeaks > 0)
                    #expect(check.expected > 0)
                    best = max(best, check.score(explained: 2 * Matcher.confirmationFloor))
                }
            }
        }
        #expect(best < Matcher.verificationScore)
    }

    /// The right place stands far above chance measured a few seconds away; the same query
    /// checked 6 s off (its shifts, 11–17 s, clear of the right place) stays below.
    @Test func theRightPlaceStandsAboveChanceAtTheShifts() throws {
        let excerpt = try SyntheticSignature.of(SyntheticSignature.excerpt(fixture.audio[1], start: 8, duration: 10))
        let right = confirmationCheck(excerpt, reference: 1, offset: 8)
        #expect(right.shifted.score(explained: 0) > 5 * Matcher.verificationScore)
        let wrong = confirmationCheck(excerpt, reference: 1, offset: 14)
        #expect(wrong.shifted.score(explained: 2 * Matcher.confirmationFloor) < Matcher.verificationScore)
    }

    /// Moved 1–3 s along the reference, the right excerpt finds a small share of its peaks
    /// (what likeness finds anywhere in the passage), far below its share at the right place;
    /// where the reference has no peaks (past its end) there is no measure.
    @Test func chanceAtShiftsIsWhatTheQueryFindsElsewhere() throws {
        let excerpt = try SyntheticSignature.of(SyntheticSignature.excerpt(fixture.audio[1], start: 8, duration: 10))
        let frames = Float(excerpt.duration / FingerprintParameters.hopDuration)
        func rate(at offset: Double) -> Double? {
            excerpt.peaks.withUnsafeBufferPointer {
                PeakVerification.chanceAtShifts($0, queryFrames: frames, catalog: fixture.catalog, reference: 1,
                                                offset: offset, timeScale: 1, pitch: 1)
            }
        }
        let right = confirmationCheck(excerpt, reference: 1, offset: 8).density
        let elsewhere = try #require(rate(at: 8))
        #expect(elsewhere > 0)
        #expect(elsewhere < 0.25 * Double(right.found) / Double(right.referencePeaks))
        #expect(rate(at: 1000) == nil)
    }

    /// Chance at the shifts only raises the expectation; with no measure it leaves the density's.
    @Test func withChanceOnlyRaisesTheExpectation() {
        let result = PeakVerification.Result(referencePeaks: 100, found: 30, expected: 6)
        #expect(result.withChance(atShifts: nil) == result)
        #expect(result.withChance(atShifts: 0.01).expected == 6)
        #expect(result.withChance(atShifts: 0.2).expected == 20)
        #expect(result.withChance(atShifts: 0.2).score(explained: 5) < result.score(explained: 5))
    }

    /// A sped-up or pitch-shifted query is compared in the reference's own time and frequency:
    /// with the candidate's time scale and pitch nearly every reference peak is found, with the
    /// inverse ones hardly any.
    @Test(arguments: [(1.04, 1.0), (0.96, 1.0), (1.0, 1.06), (1.0, 0.944)])
    func speedAndPitchAreMappedTheRightWay(timeScale: Double, pitch: Double) throws {
        let clean = try SyntheticSignature.of(SyntheticSignature.excerpt(fixture.audio[1], start: 8, duration: 12))
        // Played `timeScale`× fast (query second = timeScale reference seconds) and `pitch`× high.
        let duration = 10.0
        let length = Float(duration * timeScale / FingerprintParameters.hopDuration)
        let query = try Signature(duration: duration, peaks: clean.peaks.compactMap { p in
            let bin = p.bin * Float(pitch)
            guard p.time < length, bin >= Float(FingerprintParameters.minimumBin), bin < Float(FingerprintParameters.maximumBin)
            else { return nil }
            return Peak(time: p.time / Float(timeScale), bin: bin, magnitude: p.magnitude)
        })
        let frames = Float(duration / FingerprintParameters.hopDuration)
        func check(_ t: Double, _ f: Double) -> PeakVerification.Result {
            query.peaks.withUnsafeBufferPointer {
                PeakVerification.check($0, queryFrames: frames, catalog: fixture.catalog, reference: 1, offset: 8,
                                       timeScale: t, pitch: f)
            }
        }
        let right = check(timeScale, pitch)
        let wrong = check(1 / timeScale, 1 / pitch)
        #expect(right.referencePeaks > 50)
        #expect(Double(right.found) > 0.85 * Double(right.referencePeaks))
        #expect(Double(wrong.found) < 0.3 * Double(wrong.referencePeaks))
    }

    /// A session asks whether the followed position still holds (`Matcher.candidate`): a weak
    /// candidate there that the reference's peaks confirm holds, as in a one-off match.
    @Test func followedPositionHoldsOnAConfirmedWeakCandidate() throws {
        let matcher = Matcher(catalog: fixture.catalog)
        var held = 0
        for seed in UInt64(1)...UInt64(24) {
            let clean = try SyntheticSignature.of(SyntheticSignature.excerpt(fixture.audio[3], start: 6, duration: 10))
            let query = try SyntheticSignature.thinned(clean, keeping: 0.2, seed: seed)
            // Confirmed from `confirmationFloor` anchors up; a session does not follow the peak search's places.
            guard let weak = matcher.referenceCandidates(query).first, weak.inliers < matcher.requiredInliers,
                  weak.inliers >= Matcher.confirmationFloor
            else { continue }
            let c = try #require(matcher.candidate(query, reference: 3, offset: 6, timeScale: 1, pitch: 1))
            #expect(abs(c.offset - 6) < 0.05)
            held += 1
        }
        #expect(held >= 3)
    }
}
