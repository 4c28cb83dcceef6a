import EarshotTestSupport
import Foundation
import Testing

@testable import EarshotCore

/// The checks of a reference's cues, and the optional cues section of the catalog format.
struct CueScheduleTests {
    static func ad(_ id: String, _ start: Double, uri: String? = "https://ads.example/a.m3u8", list: String? = nil) -> Cue {
        Cue(id: id, cueClass: Cue.interstitialClass, start: start, duration: 15, assetURI: uri, assetList: list)
    }

    @Test(arguments: [
        ([Cue(id: "", start: 1)], "the id is empty"),
        ([Cue(id: "a", start: 61)], "outside the reference (0–60.0 s)"),
        ([Cue(id: "a", start: -1)], "outside the reference"),
        ([Cue(id: "a", start: 1, duration: -2)], "DURATION is -2.0"),
        ([Cue(id: "a", start: 1, plannedDuration: .nan)], "PLANNED-DURATION is nan"),
        ([Cue(id: "a", start: 1, playoutLimit: -1)], "X-PLAYOUT-LIMIT is -1.0"),
        ([Cue(id: "a", start: 1, resumeOffset: .infinity)], "X-RESUME-OFFSET is not a number"),
        ([Cue(id: "a", cueClass: "c", start: 1, duration: 2, endOnNext: true)], "END-ON-NEXT cannot be given with a DURATION"),
        ([Cue(id: "a", start: 1, endOnNext: true)], "END-ON-NEXT needs a CLASS"),
        ([ad("a", 1, uri: nil)], "needs X-ASSET-URI or X-ASSET-LIST"),
        ([ad("a", 1, list: "list.json")], "not both"),
        ([Cue(id: "a", start: 1, flags: [.pre, .post])], "both PRE and POST"),
        ([Cue(id: "a", start: 1), Cue(id: "a", start: 2)], "the id is given twice"),
    ])
    func everyRuleHasItsError(cues: [Cue], expected: String) {
        do {
            _ = try CueSchedule(cues, referenceDuration: 60)
            Issue.record("accepted \(cues)")
        } catch {
            #expect(error.message.contains(expected), "\(error.message)")
            #expect(error.message.contains("cue "))
        }
    }

    @Test func cuesAreInTimelineOrderAndTiesKeepTheirOrder() throws {
        let s = try CueSchedule([Cue(id: "late", start: 30), Cue(id: "tie1", start: 10), Cue(id: "early", start: 5),
                                 Cue(id: "tie2", start: 10)], referenceDuration: 60)
        #expect(s.cues.map(\.id) == ["early", "tie1", "tie2", "late"])
    }

    @Test func endsFollowDurationPlayoutLimitAndEndOnNext() throws {
        let s = try CueSchedule([
            Cue(id: "d", start: 1, duration: 10, playoutLimit: 4), Cue(id: "p", start: 2, plannedDuration: 3),
            Cue(id: "m", start: 3), Cue(id: "ch1", cueClass: "chapter", start: 5, endOnNext: true),
            Cue(id: "ch2", cueClass: "chapter", start: 20, endOnNext: true),
        ], referenceDuration: 60)
        #expect(s.cues.indices.map { s.end(ofCueAt: $0) } == [5, 5, nil, 20, 60])
    }

    @Test func cuesRoundTripThroughTheCatalogFile() throws {
        var catalog = CustomCatalog()
        let signature = try SyntheticSignature.of(SyntheticMusic.make(seed: 41, duration: 20))
        let cues = [Self.ad("break", 12), Cue(id: "q", cueClass: "com.example.quiz", start: 3, flags: [.once],
                                              attributes: ["X-COM-EXAMPLE-SCORE": CueAttribute(.decimal, "-1.5"),
                                                           "SCTE35-OUT": CueAttribute(.hexadecimal, "0xFC30")])]
        try catalog.addReferenceSignature(signature, representing: [MediaItem(id: "ep1")], cues: cues)
        try catalog.addReferenceSignature(signature, representing: [MediaItem(id: "ep2")])
        let data = try catalog.dataRepresentation()
        let mapped = try MappedCatalog(bytes: data)
        #expect(mapped.hasCues)
        #expect(mapped.cues(ofReference: 0).cues.map(\.id) == ["q", "break"])
        #expect(mapped.cues(ofReference: 0).cues[0] == cues[1])
        #expect(mapped.cues(ofReference: 1).isEmpty)
        #expect(mapped.cues(ofReference: 1).referenceDuration == mapped.references[1].duration)
        // Back to an editable catalog and out again: the same bytes.
        #expect(try CustomCatalog(mapped).dataRepresentation() == data)
        // Merged into another catalog, the cues come along.
        var other = CustomCatalog()
        try other.addReferenceSignature(signature, representing: [MediaItem(id: "x")])
        try other.merge(catalog)
        let merged = try MappedCatalog(bytes: try other.dataRepresentation())
        #expect(merged.cues(ofReference: 1).cues.map(\.id) == ["q", "break"])
    }

    @Test func aCatalogWithoutCuesIsWrittenAsBefore() throws {
        var catalog = CustomCatalog()
        let signature = try SyntheticSignature.of(SyntheticMusic.make(seed: 42, duration: 10))
        try catalog.addReferenceSignature(signature, representing: [MediaItem(id: "a")])
        let plain = try catalog.dataRepresentation()
        #expect(!(try MappedCatalog(bytes: plain)).hasCues)
        // Six sections, as every catalog had before cues: no cues section is written.
        #expect(String(decoding: plain, as: UTF8.self).range(of: "\"start\"") == nil)
        try catalog.setCues([Cue(id: "c", start: 1)], forReferenceAt: 0)
        let withCues = try catalog.dataRepresentation()
        #expect(withCues.count > plain.count)
        try catalog.setCues([], forReferenceAt: 0)
        #expect(try catalog.dataRepresentation() == plain)
    }

    @Test func aDamagedCuesSectionIsRefused() throws {
        var catalog = CustomCatalog()
        let signature = try SyntheticSignature.of(SyntheticMusic.make(seed: 43, duration: 10))
        try catalog.addReferenceSignature(signature, representing: [MediaItem(id: "a")], cues: [Cue(id: "flip", start: 2)])
        var data = try catalog.dataRepresentation()
        let text = [UInt8]("\"flip\"".utf8)
        let at = try #require((0...(data.count - text.count)).first { Array(data[$0..<($0 + text.count)]) == text })
        data[at + 1] = UInt8(ascii: "F")
        #expect(throws: EarshotError.self) { _ = try MappedCatalog(bytes: data) }
    }
}
