import EarshotCore
import EarshotTestSupport
import Foundation
import Testing

/// `earshot catalog cues import/list/export` through the real binary.
@Suite("earshot catalog cues")
struct CatalogCuesCommandTests {
    /// A catalog of two references: 0 holds media item "ep1" (20 s), 1 holds "ep2" (15 s).
    private func showCatalog() throws -> TemporaryDirectory {
        let ws = try TemporaryDirectory()
        try AudioFixtures.writeWAV("ep1.wav", seed: 11, duration: 20, in: ws)
        try AudioFixtures.writeWAV("ep2.wav", seed: 12, duration: 15, in: ws)
        let create = try ws.earshot("catalog", "create", "--quiet", "-o", "show.earcat", "ep1.wav", "ep2.wav")
        try #require(create.status == 0, "\(create.stderr)")
        return ws
    }

    private static let playlist = """
        #EXTM3U
        #EXT-X-TARGETDURATION:10
        #EXT-X-PROGRAM-DATE-TIME:2024-05-01T20:00:00.000Z
        #EXT-X-DATERANGE:ID="pre",CLASS="com.apple.hls.interstitial",START-DATE="2024-05-01T20:00:00.000Z",CUE="PRE,ONCE",X-ASSET-URI="https://ads.example/pre.m3u8"
        #EXT-X-DATERANGE:ID="break-1",CLASS="com.apple.hls.interstitial",START-DATE="2024-05-01T20:00:07.125Z",DURATION=30,X-ASSET-LIST="https://ads.example/b1.json",X-RESUME-OFFSET=0,X-RESTRICT="SKIP,JUMP",SCTE35-OUT=0xFC3025,X-COM-EXAMPLE-ID="XYZ 1",X-COM-EXAMPLE-N=-2.5,X-COM-EXAMPLE-KIND=LIVE
        #EXT-X-DATERANGE:ID="ch-1",CLASS="com.example.chapter",START-DATE="2024-05-01T20:00:01.1Z",END-ON-NEXT=YES,X-CONTENT-MAY-VARY="NO"
        #EXTINF:10,
        ep2-1.ts
        #EXTINF:5,
        ep2-2.ts
        #EXT-X-ENDLIST

        """

    /// The cues of reference `index` as `cues list --json` prints them.
    private func cues(_ ws: TemporaryDirectory, reference: String) throws -> [JSONValue] {
        let run = try ws.earshot("catalog", "cues", "list", "-c", "show.earcat", "--reference", reference, "--json")
        try #require(run.status == 0, "\(run.stderr)")
        return try #require(JSONValue.parse(run.stdout)["references"]?[0]?["cues"]?.array)
    }

    @Test func importListExportImportRoundTrip() throws {
        let ws = try showCatalog()
        try ws.write("breaks.m3u8", text: Self.playlist)

        // --reference by media item id.
        let imported = try ws.earshot("catalog", "cues", "import", "-c", "show.earcat", "--reference", "ep2", "breaks.m3u8")
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.stdout.hasPrefix(
            "imported 3 cues from breaks.m3u8 into reference 1 (ep2), which now has 3 cues, 2 interstitials, from 0:00:00.000 to 0:00:37.125;"),
            "\(imported.stdout)")

        let list = try ws.earshot("catalog", "cues", "list", "-c", "show.earcat")
        #expect(list.status == 0, "\(list.stderr)")
        #expect(list.stdout.contains("reference 0 (ep1), 20.00 s: no cues"), "\(list.stdout)")
        #expect(list.stdout.contains("reference 1 (ep2), 15.00 s: 3 cues, 2 interstitials, from 0:00:00.000 to 0:00:37.125"))
        let rows = list.stdout.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
        #expect(rows.contains(["id", "class", "start", "end", "flags", "asset"]))
        #expect(rows.contains(["pre", "com.apple.hls.interstitial", "0:00:00.000", "-", "PRE", "ONCE", "https://ads.example/pre.m3u8"]))
        #expect(rows.contains(["ch-1", "com.example.chapter", "0:00:01.100", "0:00:15.000", "END-ON-NEXT", "-"]))
        #expect(rows.contains(["break-1", "com.apple.hls.interstitial", "0:00:07.125", "0:00:37.125", "SKIP", "JUMP", "list:",
                               "https://ads.example/b1.json"]))

        let original = try cues(ws, reference: "1")
        #expect(original.compactMap { $0["id"]?.string } == ["pre", "ch-1", "break-1"])
        let ad = try #require(original.last)
        #expect(ad["start"]?.double == 7.125)
        #expect(ad["end"]?.double == 37.125)
        #expect(ad["resumeOffset"]?.double == 0)
        #expect(ad["restrictions"] == .array([.string("SKIP"), .string("JUMP")]))
        #expect(ad["attributes"]?["SCTE35-OUT"] == .object(["kind": .string("hex"), "value": .string("0xFC3025")]))
        #expect(ad["attributes"]?["X-COM-EXAMPLE-ID"] == .object(["kind": .string("quoted"), "value": .string("XYZ 1")]))
        #expect(ad["attributes"]?["X-COM-EXAMPLE-N"] == .object(["kind": .string("decimal"), "value": .string("-2.5")]))
        #expect(ad["attributes"]?["X-COM-EXAMPLE-KIND"] == .object(["kind": .string("enum"), "value": .string("LIVE")]))
        #expect(original[1]["contentMayVary"]?.bool == false)
        #expect(original[1]["end"]?.double == 15)

        // Export both ways, import each into reference 0: the same cues.
        let toFile = try ws.earshot("catalog", "cues", "export", "-c", "show.earcat", "--reference", "1", "-o", "out.m3u8",
                                    "--origin", "2030-06-01T12:00:00.5Z")
        #expect(toFile.status == 0 && toFile.stdout == "out.m3u8: 3 cues of reference 1 (ep2)\n", "\(toFile.stdout) \(toFile.stderr)")
        let exported = String(decoding: try ws.bytes("out.m3u8"), as: UTF8.self)
        #expect(exported.hasPrefix("#EXTM3U\n") && exported.contains("#EXT-X-PROGRAM-DATE-TIME:2030-06-01T12:00:00.500Z\n"))
        #expect(exported.contains(#"START-DATE="2030-06-01T12:00:07.625Z""#), "\(exported)")
        let back = try ws.earshot("catalog", "cues", "import", "-c", "show.earcat", "--reference", "0", "out.m3u8")
        #expect(back.status == 0, "\(back.stderr)")
        #expect(try cues(ws, reference: "0").map { $0.dropping("end") } == original.map { $0.dropping("end") })

        let csv = try ws.earshot("catalog", "cues", "export", "-c", "show.earcat", "--reference", "ep2", "--format", "csv")
        #expect(csv.status == 0, "\(csv.stderr)")
        #expect(csv.stdout.hasPrefix("id,class,start,duration,"))
        try ws.write("cues.csv", text: csv.stdout)
        try ws.write("none.csv", text: "id,start\n")
        #expect(try ws.earshot("catalog", "cues", "import", "-c", "show.earcat", "--reference", "0", "none.csv").status == 0)
        #expect(try cues(ws, reference: "0").isEmpty)
        #expect(try ws.earshot("catalog", "cues", "import", "-c", "show.earcat", "--reference", "ep1", "cues.csv").status == 0)
        let viaCSV = try cues(ws, reference: "0")
        #expect(viaCSV.map { $0.dropping("end") } == original.map { $0.dropping("end") })
        // Reference 0 is 20 s long: the chapter now ends at its end.
        #expect(viaCSV[1]["end"]?.double == 20)
    }

    @Test func mergeUpdatesByIDAndAddsTheRest() throws {
        let ws = try showCatalog()
        try ws.write("breaks.m3u8", text: Self.playlist)
        #expect(try ws.earshot("catalog", "cues", "import", "-c", "show.earcat", "--reference", "1", "breaks.m3u8").status == 0)
        try ws.write("more.csv", text: "id,class,start,asset-uri\nbreak-1,com.apple.hls.interstitial,12,https://ads.example/new.m3u8\nq1,quiz,3,\n")
        let merge = try ws.earshot("catalog", "cues", "import", "-c", "show.earcat", "--reference", "ep2", "more.csv", "--merge")
        #expect(merge.status == 0, "\(merge.stderr)")
        #expect(merge.stdout.hasPrefix("merged 2 cues (1 updated, 1 new) from more.csv into reference 1 (ep2), which now has 4 cues,"), "\(merge.stdout)")
        let after = try cues(ws, reference: "1")
        #expect(after.compactMap { $0["id"]?.string } == ["pre", "ch-1", "q1", "break-1"])
        #expect(after[3]["assetURI"]?.string == "https://ads.example/new.m3u8" && after[3]["assetList"] == nil)
        // Replacing (the default) keeps only the file's.
        #expect(try ws.earshot("catalog", "cues", "import", "-c", "show.earcat", "--reference", "1", "more.csv", "--replace").status == 0)
        #expect(try cues(ws, reference: "1").compactMap { $0["id"]?.string } == ["q1", "break-1"])
    }

    @Test func badPlaylistLeavesTheCatalogByteIdentical() throws {
        let ws = try showCatalog()
        try ws.write("breaks.m3u8", text: Self.playlist)
        #expect(try ws.earshot("catalog", "cues", "import", "-c", "show.earcat", "--reference", "1", "breaks.m3u8").status == 0)
        let before = try ws.bytes("show.earcat")

        try ws.write("bad.m3u8", text: Self.playlist.replacingOccurrences(of: "DURATION=30", with: "DURATION=-30"))
        let bad = try ws.earshot("catalog", "cues", "import", "-c", "show.earcat", "--reference", "1", "bad.m3u8")
        #expect(bad.status == 3)
        #expect(bad.errorLines == ["earshot: bad.m3u8: line 5: cue break-1: DURATION: -30 is negative; it must be 0 or more seconds"], "\(bad.stderr)")
        #expect(try ws.bytes("show.earcat") == before)

        // Past the end of the 15 s reference; with --merge too.
        try ws.write("late.m3u8", text: Self.playlist.replacingOccurrences(of: "20:00:01.1Z", with: "20:00:15.001Z"))
        let late = try ws.earshot("catalog", "cues", "import", "-c", "show.earcat", "--reference", "ep2", "late.m3u8", "--merge")
        #expect(late.status == 3)
        #expect(late.errorLines == ["earshot: late.m3u8: line 6: cue ch-1: starts at 15.001 s, outside the reference (0–15.0 s)"], "\(late.stderr)")
        #expect(try ws.bytes("show.earcat") == before)

        try ws.write("junk.m3u8", AudioFixtures.noise(count: 2000, seed: 5))
        let junk = try ws.earshot("catalog", "cues", "import", "-c", "show.earcat", "--reference", "1", "junk.m3u8")
        #expect(junk.status == 3 && junk.errorLines == ["earshot: junk.m3u8: line 1: not an HLS playlist: the first line must be #EXTM3U"],
                "\(junk.stderr)")
        try ws.write("bad.csv", text: "id,start,colour\na,1,red\n")
        let csv = try ws.earshot("catalog", "cues", "import", "-c", "show.earcat", "--reference", "1", "bad.csv")
        #expect(csv.status == 3 && csv.errorLines.first?.hasPrefix(#"earshot: bad.csv: line 1, column 3: unknown column "colour";"#) == true,
                "\(csv.stderr)")
        #expect(try ws.bytes("show.earcat") == before)
    }

    @Test func referencesAndArgumentsThatDoNotFit() throws {
        let ws = try showCatalog()
        try ws.write("breaks.m3u8", text: Self.playlist)
        let before = try ws.bytes("show.earcat")
        func failure(_ arguments: String...) throws -> (Int32, [String]) {
            let run = try ws.earshot(arguments: arguments)
            return (run.status, run.errorLines)
        }
        #expect(try failure("catalog", "cues", "import", "-c", "show.earcat", "--reference", "2", "breaks.m3u8")
            == (2, ["earshot: show.earcat: has no reference 2 (it has 2: 0…1)"]))
        #expect(try failure("catalog", "cues", "import", "-c", "show.earcat", "--reference", "ep9", "breaks.m3u8")
            == (2, [#"earshot: show.earcat: has no media item with id "ep9" (give --reference an index or a media item id)"#]))
        #expect(try failure("catalog", "cues", "import", "-c", "show.earcat", "--reference", "0", "breaks.txt")
            == (2, ["earshot: breaks.txt: cannot tell the format from the name; give --format m3u8 or --format csv"]))
        #expect(try failure("catalog", "cues", "import", "-c", "show.earcat", "--reference", "0", "breaks.m3u8", "--merge", "--replace").0 == 2)
        #expect(try failure("catalog", "cues", "export", "-c", "show.earcat", "--reference", "0", "--format", "csv", "--origin", "2024-01-01")
            == (2, ["earshot: --origin applies to playlists; a CSV gives times in seconds"]))
        #expect(try failure("catalog", "cues", "import", "-c", "show.earcat", "--reference", "0", "breaks.m3u8", "--origin", "2024-05-01T20:00:00")
            == (2, ["earshot: --origin 2024-05-01T20:00:00 is not an ISO 8601 date-time with a zone (2024-05-01T20:00:00Z)"]))
        #expect(try ws.bytes("show.earcat") == before)

        // --format when the name does not tell; --origin moves the cues.
        try ws.write("breaks.txt", text: Self.playlist)
        let moved = try ws.earshot("catalog", "cues", "import", "-c", "show.earcat", "--reference", "0", "breaks.txt", "--format", "m3u8",
                                   "--origin", "2024-05-01T19:59:59Z")
        #expect(moved.status == 0, "\(moved.stderr)")
        #expect(try cues(ws, reference: "0").compactMap { $0["start"]?.double } == [1, 2.1, 8.125])
    }

    @Test func anEditDropsTheAuthorSignature() throws {
        let ws = try showCatalog()
        #expect(try ws.earshot("keygen", "--author", "-o", "studio").status == 0)
        #expect(try ws.earshot("catalog", "sign", "-c", "show.earcat", "--key", "studio.author.key").status == 0)
        #expect(!(try ws.earshot("catalog", "display", "-c", "show.earcat").stdout.contains("unsigned")))
        try ws.write("breaks.m3u8", text: Self.playlist)
        let imported = try ws.earshot("catalog", "cues", "import", "-c", "show.earcat", "--reference", "1", "breaks.m3u8")
        #expect(imported.status == 0)
        #expect(imported.stderr.contains("warning: show.earcat was signed by ") && imported.stderr.contains("the edit removed the signature")
                && imported.stderr.contains("earshot catalog sign -c show.earcat --key"), "\(imported.stderr)")
        #expect(try ws.earshot("catalog", "display", "-c", "show.earcat").stdout.contains("nobody (unsigned)"))
        // `catalog update` says so too; an unsigned catalog's edit says nothing of signatures.
        #expect(try ws.earshot("catalog", "sign", "-c", "show.earcat", "--key", "studio.author.key").status == 0)
        let updated = try ws.earshot("catalog", "update", "-c", "show.earcat", "--max-query", "10")
        #expect(updated.status == 0 && updated.stderr.contains("the edit removed the signature"), "\(updated.stderr)")
        let again = try ws.earshot("catalog", "update", "-c", "show.earcat", "--max-query", "11")
        #expect(again.status == 0 && !again.stderr.contains("signature"), "\(again.stderr)")
    }

    @Test func helpTeachesWithExamples() throws {
        let ws = try TemporaryDirectory()
        let help = try ws.earshot("catalog", "cues", "import", "--help")
        #expect(help.status == 0)
        #expect(help.stdout.contains("earshot catalog cues import -c show.earcat --reference 0 breaks.m3u8"))
        #expect(help.stdout.contains("drops an author signature"))
        #expect(try ws.earshot("catalog", "--help").stdout.contains("cues"))
    }
}

extension JSONValue {
    /// The object without member `key`.
    fileprivate func dropping(_ key: String) -> JSONValue {
        guard case .object(var object) = self else { return self }
        object[key] = nil
        return .object(object)
    }
}
