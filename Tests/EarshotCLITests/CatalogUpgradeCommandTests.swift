import EarshotTestSupport
import Foundation
import Testing

@testable import EarshotCore

/// `earshot catalog upgrade` on catalogs as earlier releases wrote them (format 1).
@Suite("earshot catalog upgrade")
struct CatalogUpgradeCommandTests {
    /// A workspace with `show.earcat` in format 1 (two references, a cue) and a clip of the
    /// second reference.
    private func workspace() throws -> TemporaryDirectory {
        let ws = try TemporaryDirectory()
        let music = AudioFixtures.music(seed: 12, duration: 30)
        try AudioFixtures.writeWAV("one.wav", seed: 11, duration: 30, in: ws)
        try ws.write("two.wav", WAVFile.bytes(music))
        try ws.write("clip.wav", WAVFile.bytes(Array(music[(16_000 * 12)..<(16_000 * 20)])))
        let create = try ws.earshot("catalog", "create", "-o", "current.earcat", "one.wav", "two.wav")
        #expect(create.status == 0, "\(create.stderr)")
        var catalog = try CustomCatalog(dataRepresentation: try ws.bytes("current.earcat"))
        try catalog.setCues([Cue(id: "q", start: 3, duration: 2)], forReferenceAt: 1)
        try ws.write("show.earcat", try CatalogWriter.encode(catalog, version: 1))
        return ws
    }

    @Test func aFormat1CatalogIsMatchedThenUpgradedInPlace() throws {
        let ws = try workspace()
        let before = try ws.bytes("show.earcat")
        let display = try ws.earshot("catalog", "display", "-c", "show.earcat")
        #expect(display.status == 0, "\(display.stderr)")
        #expect(display.stdout.contains("file format:   1 (an earlier release's: `earshot catalog upgrade show.earcat` rewrites it in format 2)"),
                "\(display.stdout)")
        let matchBefore = try ws.earshot("match", "-c", "show.earcat", "clip.wav", "--json")
        #expect(matchBefore.status == 0, "\(matchBefore.stderr)")

        let upgrade = try ws.earshot("catalog", "upgrade", "show.earcat")
        #expect(upgrade.status == 0, "\(upgrade.stderr)")
        #expect(upgrade.stdout.contains("upgraded show.earcat from format 1 to format 2; show.earcat: 2 references"), "\(upgrade.stdout)")
        let after = try ws.bytes("show.earcat")
        #expect(after != before)
        let upgraded = try MappedCatalog(bytes: after)
        #expect(upgraded.formatVersion == 2)
        // The same catalog as one made now: references, items, cue and limits kept.
        #expect(try CustomCatalog(dataRepresentation: after) == (try CustomCatalog(dataRepresentation: before)))
        #expect(upgraded.cues(ofReference: 1).cues.map(\.id) == ["q"])
        let matchAfter = try ws.earshot("match", "-c", "show.earcat", "clip.wav", "--json")
        #expect(matchAfter.stdout == matchBefore.stdout)
        let json = try JSONValue.parse(matchAfter.stdout)
        #expect(json["items"]?[0]?["id"]?.string == "two")

        let again = try ws.earshot("catalog", "upgrade", "show.earcat", "current.earcat")
        #expect(again.status == 0)
        #expect(again.stdout.contains("show.earcat: already format 2, left as it is"))
        #expect(again.stdout.contains("current.earcat: already format 2, left as it is"))
        #expect(try ws.bytes("show.earcat") == after)
        let display2 = try ws.earshot("catalog", "display", "-c", "show.earcat", "--json")
        let shown = try JSONValue.parse(display2.stdout)
        #expect(shown["formatVersion"]?.double == 2)
        // Format 2's index: a directory of 4-byte entries and one 5-byte record per landmark.
        #expect(shown["indexSize"]?.double.map { Int($0) } == (upgraded.indexByteCount))
        let earlier = try MappedCatalog(bytes: before)
        #expect(upgraded.indexByteCount < earlier.indexByteCount)
    }

    /// A file that is not a sound catalog is refused with the one-line error every command
    /// gives, and nothing is written; the files named before it were upgraded.
    @Test func aBadFileIsRefusedAndLeftAsItWas() throws {
        let ws = try workspace()
        var corrupt = try ws.bytes("show.earcat")
        corrupt[corrupt.count / 2] ^= 0x20
        try ws.write("corrupt.earcat", corrupt)
        try ws.write("first.earcat", try ws.bytes("show.earcat"))
        let upgrade = try ws.earshot("catalog", "upgrade", "first.earcat", "corrupt.earcat")
        #expect(upgrade.status != 0)
        #expect(upgrade.stderr.hasPrefix("earshot: corrupt.earcat: ") && upgrade.stderr.contains("checksum mismatch"), "\(upgrade.stderr)")
        #expect(try ws.bytes("corrupt.earcat") == corrupt)
        #expect(try MappedCatalog(bytes: try ws.bytes("first.earcat")).formatVersion == 2)
        let names = try FileManager.default.contentsOfDirectory(atPath: ws.url.path)
        #expect(!names.contains { $0.contains(".tmp") }, "\(names)")
    }

    /// Upgrading changes the bytes a signature covered: a signed catalog is upgraded only when
    /// told how to sign (again, in the same write) or that the signature may go.
    @Test func aSignedCatalogIsSignedAgainOrLeftAlone() throws {
        let ws = try workspace()
        #expect(try ws.earshot("keygen", "--author", "-o", "studio").status == 0)
        #expect(try ws.earshot("catalog", "sign", "-c", "show.earcat", "--key", "studio.author.key").status == 0)
        let signed = try ws.bytes("show.earcat")
        let author = try MappedCatalog(bytes: signed).signature?.publicKey
        #expect(author != nil)
        try ws.write("copy.earcat", signed)

        let refused = try ws.earshot("catalog", "upgrade", "show.earcat")
        #expect(refused.status == 2, "\(refused.stderr)")
        #expect(refused.stderr.contains("show.earcat: signed by ") && refused.stderr.contains("give --key AUTHOR.author.key"),
                "\(refused.stderr)")
        #expect(try ws.bytes("show.earcat") == signed)

        let resigned = try ws.earshot("catalog", "upgrade", "--key", "studio.author.key", "show.earcat")
        #expect(resigned.status == 0, "\(resigned.stderr)")
        #expect(resigned.stdout.contains("upgraded show.earcat from format 1 to format 2 and signed as "), "\(resigned.stdout)")
        let after = try MappedCatalog(bytes: try ws.bytes("show.earcat"))
        #expect(after.formatVersion == 2)
        #expect(after.signature?.publicKey == author)
        let display = try ws.earshot("catalog", "display", "-c", "show.earcat", "--json")
        #expect(display.status == 0, "the new signature verifies: \(display.stderr)")

        let dropped = try ws.earshot("catalog", "upgrade", "--drop-signature", "copy.earcat")
        #expect(dropped.status == 0, "\(dropped.stderr)")
        #expect(try MappedCatalog(bytes: try ws.bytes("copy.earcat")).signature == nil)
        #expect(try ws.earshot("catalog", "upgrade", "--key", "studio.author.key", "--drop-signature", "copy.earcat").status == 2)
    }
}
