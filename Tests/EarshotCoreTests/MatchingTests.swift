import EarshotTestSupport
import Foundation
import Testing

@testable import EarshotCore

/// End-to-end recognition on synthetic audio generated here: signature → catalog → match.
final class MatchingFixture: @unchecked Sendable {
    static let shared = MatchingFixture()
    let audio: [[Float]]
    let intro: [Float]
    let catalog: MappedCatalog

    private init() {
        let intro = SyntheticMusic.make(seed: 999, duration: 8)
        self.intro = intro
        // References 0–3: distinct music. 4 and 5: different episodes sharing an 8 s intro.
        var audio = (0..<4).map { SyntheticMusic.make(seed: UInt64(10 + $0), duration: 30) }
        audio.append(intro + SyntheticMusic.make(seed: 50, duration: 20))
        audio.append(intro + SyntheticMusic.make(seed: 51, duration: 20))
        self.audio = audio
        var catalog = CustomCatalog()
        for (i, samples) in audio.enumerated() {
            var items = [MediaItem(id: "ref\(i)", title: "Reference \(i)")]
            if i == 0 { items.append(MediaItem(id: "ref0-segment", timeRanges: [10..<20])) }
            try! catalog.addReferenceSignature(try! SyntheticSignature.of(samples), representing: items)
        }
        self.catalog = try! MappedCatalog(bytes: try! catalog.dataRepresentation())
    }
}

struct MatchingTests {
    let fixture = MatchingFixture.shared
    /// A matcher serves one thread at a time; tests run in parallel, so each gets its own.
    let matcher = Matcher(catalog: MatchingFixture.shared.catalog)

    private func match(_ samples: [Float]) throws -> MatchResult {
        matcher.match(try SyntheticSignature.of(samples))
    }

    @Test(arguments: [(0, 3.0, 10.0), (1, 17.25, 10.0), (2, 5.5, 3.0), (3, 19.0, 5.0)])
    func excerptMatchesItsReferenceAndOffset(reference: Int, start: Double, duration: Double) throws {
        let result = try match(SyntheticSignature.excerpt(fixture.audio[reference], start: start, duration: duration))
        let best = try #require(result.mediaItems.first)
        #expect(best.referenceIndex == reference)
        #expect(result.mediaItems.contains { $0.mediaItem.id == "ref\(reference)" })
        #expect(abs(best.matchOffset - start) < 0.04)
        #expect(abs(best.frequencySkew) < 0.003)
        #expect(abs(best.predictedCurrentMatchOffset - (start + duration)) < 0.06)
        #expect(best.confidence > 0.5 && best.confidence <= 1)
    }

    @Test func unrelatedAudioDoesNotMatch() throws {
        for seed in UInt64(500)..<UInt64(505) {
            let result = try match(SyntheticMusic.make(seed: seed, duration: 10))
            guard case .noMatch = result else {
                Issue.record("unrelated audio matched: \(result.mediaItems.map(\.mediaItem.id))")
                continue
            }
        }
    }

    @Test func leadingUnknownAudioGivesNegativeOffset() throws {
        let query = SyntheticMusic.make(seed: 600, duration: 3) + SyntheticSignature.excerpt(fixture.audio[2], start: 0, duration: 7)
        let best = try #require(try match(query).mediaItems.first)
        #expect(best.mediaItem.id == "ref2")
        #expect(abs(best.matchOffset - -3) < 0.05)
    }

    @Test(arguments: [1.04, 0.97])
    func speedChangeIsMeasuredAndMappedToReferenceTime(speed: Double) throws {
        let start = 6.0
        let source = SyntheticSignature.excerpt(fixture.audio[1], start: start, duration: 10 * speed)
        let best = try #require(try match(Degradations.changeSpeed(source, by: speed)).mediaItems.first)
        #expect(best.mediaItem.id == "ref1")
        #expect(abs(best.matchOffset - start) < 0.06)
        #expect(abs(best.frequencySkew - (speed - 1)) < 0.005)
        #expect(abs(best.timeSkew - (speed - 1)) < 0.005)
        #expect(abs(best.predictedCurrentMatchOffset - (start + 10 * speed)) < 0.1)
    }

    @Test func noisyQueryStillMatches() throws {
        let clean = SyntheticSignature.excerpt(fixture.audio[3], start: 12, duration: 10)
        let best = try #require(try match(Degradations.addWhiteNoise(clean, snr: 0, seed: 3)).mediaItems.first)
        #expect(best.mediaItem.id == "ref3")
    }

    @Test func sharedIntroReturnsEveryEpisode() throws {
        let result = try match(SyntheticSignature.excerpt(fixture.intro, start: 1, duration: 6))
        let ids = Set(result.mediaItems.map(\.mediaItem.id))
        #expect(ids == ["ref4", "ref5"])
        #expect(result.mediaItems.allSatisfy { abs($0.matchOffset - 1) < 0.05 })
    }

    /// Time-ranged items follow the current position (the end of the query), not its start.
    @Test func timeRangedItemFollowsTheCurrentPosition() throws {
        let inside = try match(SyntheticSignature.excerpt(fixture.audio[0], start: 12, duration: 4)).mediaItems.map(\.mediaItem.id)
        #expect(inside == ["ref0-segment", "ref0"])
        let enteringRange = try match(SyntheticSignature.excerpt(fixture.audio[0], start: 5, duration: 6)).mediaItems.map(\.mediaItem.id)
        #expect(enteringRange == ["ref0-segment", "ref0"])
        let outside = try match(SyntheticSignature.excerpt(fixture.audio[0], start: 22, duration: 4)).mediaItems.map(\.mediaItem.id)
        #expect(outside == ["ref0"])
    }

    @Test func queryDurationLimitsAreEnforced() throws {
        let long = try SyntheticSignature.of(SyntheticSignature.excerpt(fixture.audio[0], start: 0, duration: 13))
        guard case .error(let e) = matcher.match(long) else {
            Issue.record("13 s query accepted")
            return
        }
        #expect(e.code == 201)
        let short = try SyntheticSignature.of(SyntheticSignature.excerpt(fixture.audio[0], start: 3, duration: 0.5))
        guard case .error(let e2) = matcher.match(short) else {
            Issue.record("0.5 s query accepted")
            return
        }
        #expect(e2.message.contains("at least"))
    }

    @Test func frequencySkewRangesSelectThePitchShiftedCopy() throws {
        // The same intro indexed twice: unshifted, and pitched up 1.5 % (WWDC22's technique).
        let base = SyntheticMusic.make(seed: 77, duration: 20)
        var catalog = CustomCatalog()
        try catalog.addReferenceSignature(try SyntheticSignature.of(base), representing: [
            MediaItem(id: "plain", frequencySkewRanges: [-0.005..<0.005]),
        ])
        try catalog.addReferenceSignature(try SyntheticSignature.of(Degradations.changeSpeed(base, by: 1.015)), representing: [
            MediaItem(id: "shifted", frequencySkewRanges: [-0.005..<0.005]),
        ])
        let matcher = Matcher(catalog: try MappedCatalog(bytes: try catalog.dataRepresentation()))
        let plainQuery = try SyntheticSignature.of(SyntheticSignature.excerpt(base, start: 5, duration: 8))
        #expect(matcher.match(plainQuery).mediaItems.map(\.mediaItem.id) == ["plain"])
        let shiftedQuery = try SyntheticSignature.of(Degradations.changeSpeed(SyntheticSignature.excerpt(base, start: 5, duration: 8.2), by: 1.015))
        #expect(matcher.match(shiftedQuery).mediaItems.map(\.mediaItem.id) == ["shifted"])
    }
}

struct RepeatedSectionTests {
    /// A reference that plays the same section twice: the query matches both places, and the
    /// result lists both, one after the other (a session picks the one that continues what it
    /// heard). Audio around the section tells them apart, and then only one is listed.
    @Test func repeatedSectionListsEveryPlace() throws {
        let section = SyntheticMusic.make(seed: 321, duration: 10)
        let reference = SyntheticMusic.make(seed: 322, duration: 5) + section + SyntheticMusic.make(seed: 323, duration: 5) + section
        var catalog = CustomCatalog()
        try catalog.addReferenceSignature(try SyntheticSignature.of(reference), representing: [MediaItem(id: "song")])
        let matcher = Matcher(catalog: try MappedCatalog(bytes: try catalog.dataRepresentation()))
        let items = matcher.match(try SyntheticSignature.of(SyntheticSignature.excerpt(section, start: 1, duration: 8))).mediaItems
        #expect(items.map(\.mediaItem.id) == ["song", "song"])
        let offsets = items.map(\.matchOffset).sorted()
        #expect(offsets.count == 2 && abs(offsets[0] - 6) < 0.05 && abs(offsets[1] - 21) < 0.05)
        #expect(items.count == 2 && items[0].confidence >= items[1].confidence)
        // Starting in the audio before the second repeat: only that place holds.
        let across = matcher.match(try SyntheticSignature.of(SyntheticSignature.excerpt(reference, start: 17, duration: 8))).mediaItems
        #expect(across.count == 1)
        #expect(abs((across.first?.matchOffset ?? 0) - 17) < 0.05)
    }
}

struct PitchShiftTests {
    /// A pitch shift with the tempo kept (a karaoke key change): every peak's frequency moves,
    /// no time does. Made on the signature, so the test is about the search, not a pitch shifter.
    @Test(arguments: [1.0595, 0.9439, 1.045, 0.955])
    func pitchOnlyShiftIsFoundAndMeasured(pitch: Double) throws {
        let fixture = MatchingFixture.shared
        let matcher = Matcher(catalog: fixture.catalog)
        let top = try #require(matcher.match(try Self.shifted(fixture.audio[2], start: 9, pitch: pitch)).mediaItems.first)
        #expect(top.mediaItem.id == "ref2")
        #expect(abs(top.matchOffset - 9) < 0.05)
        #expect(abs(top.frequencySkew - (pitch - 1)) < 0.005)
        #expect(abs(top.timeSkew) < 0.005)
        // Found with the evidence of a clear match, not scraped together under a speed change.
        #expect(top.confidence > 0.9)
    }

    /// A session following a pitch-shifted programme asks whether the window still holds the
    /// followed position: it is searched under the nearest pitch, whatever the time scale.
    @Test(arguments: [1.02, 0.985, 1.045])
    func followedPositionHoldsUnderAPitchShift(pitch: Double) throws {
        let fixture = MatchingFixture.shared
        let matcher = Matcher(catalog: fixture.catalog)
        let c = try #require(matcher.candidate(try Self.shifted(fixture.audio[2], start: 9, pitch: pitch), reference: 2,
                                               offset: 9, timeScale: 1, pitch: pitch))
        #expect(abs(c.offset - 9) < 0.05)
        #expect(abs(c.pitchRatio - pitch) < 0.005)
        #expect(c.inliers >= 24)
    }

    /// 10 s of `audio` from `start`, every peak's frequency moved by `pitch`, times kept (peaks
    /// shifted out of the analysed band are lost).
    static func shifted(_ audio: [Float], start: Double, pitch: Double) throws -> Signature {
        let query = try SyntheticSignature.of(SyntheticSignature.excerpt(audio, start: start, duration: 10))
        let band = Float(FingerprintParameters.minimumBin)...Float(FingerprintParameters.maximumBin)
        return try Signature(duration: query.duration, peaks: query.peaks.compactMap {
            let bin = $0.bin * Float(pitch)
            return band.contains(bin) ? Peak(time: $0.time, bin: bin, magnitude: $0.magnitude) : nil
        })
    }
}

struct RankingTests {
    private func candidate(_ reference: Int, _ offset: Double, _ inliers: Int) -> Matcher.Candidate {
        Matcher.Candidate(referenceIndex: reference, offset: offset, timeScale: 1, pitchRatio: 1, inliers: inliers,
                          confidence: Matcher.confidence(inliers: inliers, required: Matcher.minimumInliers))
    }

    /// References best first, each followed by its other places that score alike; the same place
    /// found twice (two hypotheses) counts once; anything under a quarter of the best goes.
    @Test func placesThatScoreAlikeFollowTheirReferencesBest() {
        let ranked = MatchRanking.ranked([
            candidate(1, 50, 30), candidate(0, 10, 40), candidate(0, 70, 32), candidate(0, 10.4, 39),
            candidate(0, 130, 20), candidate(1, 90, 24), candidate(2, 5, 9), candidate(1, 20, 8),
        ])
        #expect(ranked.map(\.referenceIndex) == [0, 0, 1, 1])
        #expect(ranked.map(\.offset) == [10, 70, 50, 90])
    }

    /// Within a reference, a place the search found that holds clearly more of the reference's own
    /// peaks leads, even with too few anchors to be listed as alike; the alike places follow by
    /// the same measure. A near tie (a real repeat) keeps the anchors' order; references keep theirs.
    @Test func thePlaceHoldingClearlyMorePeaksLeads() {
        let found = [candidate(0, 10, 16), candidate(0, 70, 14), candidate(0, 130, 11), candidate(1, 50, 12), candidate(1, 90, 11)]
        let ranked = MatchRanking.ranked(found)
        #expect(ranked.map(\.offset) == [10, 70, 50, 90], "130 has under three quarters of the anchors")
        let peakScores: [Double: Double] = [10: 20, 70: 21, 130: 20 + MatchThresholds.leadMargin + 0.5, 50: 15, 90: 15 + MatchThresholds.leadMargin - 0.5]
        let led = MatchRanking.leading(ranked, among: found) { peakScores[$0.offset]! }
        #expect(led.map(\.offset) == [130, 70, 10, 50, 90])
        #expect(led.map(\.referenceIndex) == [0, 0, 0, 1, 1])
        // The leader carries its reference's best confidence (what a session's jump check and
        // cues gate on); the places after it keep their own.
        #expect(led[0].confidence == found[0].confidence && led[0].inliers == 11)
        #expect(led[1].confidence == found[1].confidence)
        // Nothing clearly better: the ranking stands.
        #expect(MatchRanking.leading(ranked, among: found) { _ in 1 }.map(\.offset) == [10, 70, 50, 90])
    }

    /// An alike place of the ranked group can lead too, listed once; exactly the margin is enough.
    @Test func anAlikePlaceCanLeadAndExactlyTheMarginIsEnough() {
        let found = [candidate(0, 10, 20), candidate(0, 40, 18), candidate(0, 80, 17)]
        let ranked = MatchRanking.ranked(found)
        #expect(ranked.map(\.offset) == [10, 40, 80])
        let scores: [Double: Double] = [10: 10, 40: 10 + MatchThresholds.leadMargin, 80: 11]
        let led = MatchRanking.leading(ranked, among: found) { scores[$0.offset]! }
        #expect(led.map(\.offset) == [40, 80, 10])
        #expect(led[0].confidence == found[0].confidence)
        let under: [Double: Double] = [10: 10, 40: 10 + MatchThresholds.leadMargin - 0.01, 80: 11]
        #expect(MatchRanking.leading(ranked, among: found) { under[$0.offset]! }.map(\.offset) == [10, 40, 80])
    }

    /// A place no search found (`PeakSearch.otherPlaces`) can lead its reference, but only by the
    /// wider `elsewhereMargin`; it never brings in a reference the ranking does not list.
    @Test func aPlaceNoSearchFoundLeadsOnlyByTheWiderMargin() {
        let found = [candidate(0, 10, 20), candidate(1, 50, 14)]
        let ranked = MatchRanking.ranked(found)
        #expect(ranked.map(\.offset) == [10, 50])
        #expect(MatchThresholds.elsewhereMargin > MatchThresholds.leadMargin)
        let unrelated = candidate(2, 300, 3)
        for (gain, leads) in [(MatchThresholds.elsewhereMargin, true), (MatchThresholds.elsewhereMargin - 0.01, false), (MatchThresholds.leadMargin, false)] {
            let scores: [Double: Double] = [10: 10, 50: 10, 130: 10 + gain, 300: 100]
            let led = MatchRanking.leading(ranked, among: found, elsewhere: [candidate(0, 130, 3), unrelated]) { scores[$0.offset]! }
            // A place that leads is followed by the ranked one it displaced.
            #expect(led.map(\.offset) == (leads ? [130, 10, 50] : [10, 50]), "gain \(gain)")
            #expect(led.map(\.referenceIndex) == (leads ? [0, 0, 1] : [0, 1]))
            // The reference is as sure as it was; the place says where.
            #expect(led[0].confidence == found[0].confidence)
        }
        // Where a search found the same place (within a second), the fit with more aligned
        // anchors stands for it, with its own margin.
        // 130 beats the leader by more than `leadMargin`, less than `elsewhereMargin`.
        let between = 10 + (MatchThresholds.leadMargin + MatchThresholds.elsewhereMargin) / 2
        let scores: [Double: Double] = [10: 10, 130: between, 130.3: between, 50: 10]
        let foundThere = found + [candidate(0, 130, 4)]
        #expect(MatchRanking.leading(ranked, among: foundThere, elsewhere: [candidate(0, 130.3, 3)]) { scores[$0.offset]! }
            .map(\.offset) == [130, 10, 50])
        #expect(MatchRanking.leading(ranked, among: foundThere, elsewhere: [candidate(0, 130.3, 6)]) { scores[$0.offset]! }
            .map(\.offset) == [10, 50])
        // A found place that beats the leader by its margin still leads when a place no search
        // found scores higher without beating the wider margin.
        let both: [Double: Double] = [10: 10, 130: between, 200: 10 + MatchThresholds.elsewhereMargin - 0.01, 50: 10]
        #expect(MatchRanking.leading(ranked, among: foundThere, elsewhere: [candidate(0, 200, 3)]) { both[$0.offset]! }
            .map(\.offset) == [130, 10, 50])
    }
}

struct ConfidenceCalibrationTests {
    /// One more aligned anchor per tenfold index entries beyond a million.
    @Test func requiredInliersGrowWithTheCatalog() {
        #expect(Matcher.requiredInliers(entryCount: 0) == Matcher.minimumInliers)
        #expect(Matcher.requiredInliers(entryCount: 258_000) == Matcher.minimumInliers)  // 3 h
        #expect(Matcher.requiredInliers(entryCount: 1_000_000) == Matcher.minimumInliers)
        #expect(Matcher.requiredInliers(entryCount: 1_000_001) == Matcher.minimumInliers + 1)
        #expect(Matcher.requiredInliers(entryCount: 9_983_286) == Matcher.minimumInliers + 1)  // 100 h (the Scale benchmark's)
        #expect(Matcher.requiredInliers(entryCount: 10_000_000) == Matcher.minimumInliers + 1)
        #expect(Matcher.requiredInliers(entryCount: 10_000_001) == Matcher.minimumInliers + 2)
        #expect(Matcher.requiredInliers(entryCount: 90_000_000) == Matcher.minimumInliers + 2)
    }

    /// The least a match can have means the same at every size, and more evidence is more confidence.
    @Test func confidenceIsTheMarginOverWhatTheCatalogRequires() {
        let small = Matcher.minimumInliers, large = Matcher.minimumInliers + 2
        #expect(Matcher.confidence(inliers: small, required: small) == Matcher.confidence(inliers: large, required: large))
        #expect(Matcher.confidence(inliers: small + 3, required: small) > Matcher.confidence(inliers: small + 3, required: large))
        let scale = (small...60).map { Matcher.confidence(inliers: $0, required: small) }
        #expect(zip(scale, scale.dropFirst()).allSatisfy { $0.0 < $0.1 || $0.1 == 1 })
        #expect(scale.first! > 0.4 && scale.first! < 0.5 && scale.last! > 0.99)
    }
}

struct CorruptMetadataTests {
    /// Media items that are not valid JSON behind valid checksums (a crafted file) give a clear
    /// `catalogInvalid` when the catalog is opened (media items are decoded once, at load), so
    /// such a catalog is never served.
    @Test func undecodableMediaItemsAreAnError() throws {
        let audio = SyntheticMusic.make(seed: 5, duration: 20)
        var catalog = CustomCatalog()
        try catalog.addReferenceSignature(try SyntheticSignature.of(audio), representing: [MediaItem(id: "x")])
        var bytes = try catalog.dataRepresentation()
        // Overwrite the metadata section's bytes with non-JSON and re-seal its checksum and the
        // header checksum.
        let tableEnd = CatalogFormatTests.tableEnd(of: bytes)
        let entry = try #require(stride(from: 96, to: tableEnd, by: 32).first { bytes[$0] == UInt8(CatalogLayout.Section.metadata.rawValue) })
        let offset = Int(bytes[(entry + 8)..<(entry + 16)].reversed().reduce(0) { $0 << 8 | UInt64($1) })
        let length = Int(bytes[(entry + 16)..<(entry + 24)].reversed().reduce(0) { $0 << 8 | UInt64($1) })
        for i in offset..<(offset + length) { bytes[i] = UInt8(ascii: "#") }
        func put(_ v: UInt32, at o: Int) { for k in 0..<4 { bytes[o + k] = UInt8((v >> (8 * UInt32(k))) & 0xFF) } }
        put(CRC32.checksum(Array(bytes[offset..<(offset + length)])), at: entry + 24)
        put(CRC32.checksum(Array(bytes[0..<92]) + Array(bytes[96..<tableEnd])), at: 92)
        let error: EarshotError
        do {
            _ = try MappedCatalog(bytes: bytes)
            Issue.record("corrupt media items were not reported")
            return
        } catch let e { error = e }
        #expect(error.code == 300)
        #expect(error.message.contains("media items of reference 0"))
    }
}

/// A query that runs past the end of the reference it matches (the programme ended, or looped,
/// while the window still holds its last seconds) places "now" at the end, never beyond it.
struct ReferenceEndTests {
    @Test func nowIsNeverPastTheReferencesEnd() throws {
        let fixture = MatchingFixture.shared
        let matcher = Matcher(catalog: fixture.catalog)
        let reference = fixture.audio[1]
        let duration = fixture.catalog.references[1].duration
        // Its last 7 s, then 4 s of silence after it.
        let query = SyntheticSignature.excerpt(reference, start: 23, duration: 7) + [Float](repeating: 0, count: 4 * 16_000)
        let result = matcher.match(try SyntheticSignature.of(query))
        let top = try #require(result.mediaItems.first)
        #expect(top.mediaItem.id == "ref1")
        #expect(abs(top.matchOffset - 23) < 0.1)
        #expect(top.referenceDuration == duration)
        #expect(top.predictedCurrentMatchOffset <= duration, "now at \(top.predictedCurrentMatchOffset) s of a \(duration) s reference")
        #expect(top.predictedOffset(after: 5) == duration)
    }
}
