import EarshotCore
import EarshotTestSupport
import Foundation
import Testing

/// The `earshot` executable end to end: signature → catalog → display → match, and the
/// editing commands' round trips. Audio is synthetic and written as WAV by the test.
@Suite("earshot CLI workflows")
struct CLIWorkflowTests {
    @Test func signatureCatalogDisplayAndMatch() throws {
        let ws = try TemporaryDirectory()
        let episode2 = AudioFixtures.music(seed: 2, duration: 30)
        try AudioFixtures.writeWAV("episode1.wav", seed: 1, duration: 30, in: ws)
        try ws.write("episode2.wav", WAVFile.bytes(episode2))
        try AudioFixtures.writeWAV("ad.wav", seed: 3, duration: 20, in: ws)

        let signature = try ws.earshot("signature", "episode2.wav", "-o", "episode2.earsig")
        #expect(signature.status == 0, "\(signature.stderr)")
        #expect(signature.stdout.contains("episode2.earsig: 30.00 s,") && signature.stdout.contains("peaks"))

        try ws.write("items.csv", text: #"""
            signature,id,title,artist,timeRanges,custom.question
            episode1.wav,ep1,Episode 1,Host,,
            episode2.earsig,q1,Question 1,,0-10,"{""text"":""2+2?"",""answer"":4}"
            episode2.earsig,q2,Question 2,,10-30,"[1,""two"",3.5]"
            episode2.earsig,ep2,Episode 2,,,

            """#)
        let create = try ws.earshot("catalog", "create", "-o", "show.earcat", "episode1.wav", "episode2.earsig", "ad.wav",
                                    "--media-items", "items.csv")
        #expect(create.status == 0, "\(create.stderr)")
        #expect(create.stdout.contains("show.earcat: 3 references, 5 media items"))
        // Not a terminal: one progress line per input.
        #expect(create.stderr.contains("[1/3] episode1.wav") && create.stderr.contains("[3/3] ad.wav"))

        let display = try ws.earshot("catalog", "display", "-c", "show.earcat", "--json")
        #expect(display.status == 0, "\(display.stderr)")
        let json = try JSONValue.parse(display.stdout)
        #expect(json["referenceCount"]?.double == 3)
        #expect(json["mediaItemCount"]?.double == 5)
        #expect(json["minimumQuerySignatureDuration"]?.double == 1)
        #expect(json["maximumQuerySignatureDuration"]?.double == 12)
        #expect(abs((json["totalDuration"]?.double ?? 0) - 80) < 0.01)
        #expect((json["fileSize"]?.double ?? 0) == Double(try ws.bytes("show.earcat").count))
        let reference1 = try #require(json["references"]?[1])
        #expect(reference1["index"]?.double == 1)
        #expect(abs((reference1["duration"]?.double ?? 0) - 30) < 0.01)
        #expect((reference1["peakCount"]?.double ?? 0) > 50)
        let q1 = try #require(reference1["mediaItems"]?[0])
        #expect(q1["id"]?.string == "q1")
        #expect(q1["timeRanges"] == .array([.array([.number(0), .number(10)])]))
        #expect(q1["customProperties"]?["question"]?["answer"]?.double == 4)
        #expect(reference1["mediaItems"]?[1]?["customProperties"]?["question"]
            == .array([.number(1), .string("two"), .number(3.5)]))
        #expect(json["references"]?[0]?["mediaItems"]?[0]?["artist"]?.string == "Host")
        #expect(json["references"]?[2]?["mediaItems"]?[0]?["id"]?.string == "ad")

        let text = try ws.earshot("catalog", "display", "-c", "show.earcat")
        #expect(text.status == 0)
        #expect(text.stdout.contains("reference 1: 30.00 s"))
        #expect(text.stdout.contains("timeRanges: 10-30"))
        #expect(text.stdout.contains(#"custom.question: {"answer":4,"text":"2+2?"}"#))
        // create and display count the same peaks: those the catalog keeps.
        for (k, input) in ["episode1.wav", "episode2.earsig", "ad.wav"].enumerated() {
            let made = try #require(create.stderr.split(separator: "\n").first { $0.hasPrefix("[\(k + 1)/3] \(input): ") })
            let kept = try #require(made.split(separator: ", ").last?.split(separator: " ").first.map(String.init), "\(made)")
            #expect(made.contains("\(kept) peaks kept of "), "\(made)")
            #expect(text.stdout.contains("reference \(k): ") && text.stdout.split(separator: "\n")
                .contains { $0.hasPrefix("reference \(k): ") && $0.hasSuffix(", \(kept) peaks") }, "\(made) vs \(text.stdout)")
        }

        // An excerpt 12 s into episode 2: inside q2's range, so q2 first, then the unranged ep2.
        try AudioFixtures.writeExcerpt("clip.wav", of: episode2, from: 12, length: 8, in: ws)
        let match = try ws.earshot("match", "--catalog", "show.earcat", "clip.wav", "--json")
        #expect(match.status == 0, "\(match.stderr)")
        let result = try JSONValue.parse(match.stdout)
        #expect(result["result"]?.string == "match")
        let items = try #require(result["items"]?.array)
        #expect(items.compactMap { $0["id"]?.string } == ["q2", "ep2"])
        let best = try #require(items.first)
        #expect(best["referenceIndex"]?.double == 1)
        let offset = try #require(best["matchOffset"]?.double)
        #expect(abs(offset - 12) < 0.1, "match offset \(offset)")
        let predicted = try #require(best["predictedCurrentMatchOffset"]?.double)
        #expect(abs(predicted - 20) < 0.2, "predicted offset \(predicted)")
        #expect((best["confidence"]?.double ?? 0) > 0.5)
        #expect(abs(best["frequencySkew"]?.double ?? 1) < 0.01)

        let human = try ws.earshot("match", "-c", "show.earcat", "clip.wav")
        #expect(human.status == 0)
        #expect(human.stdout.contains("1. Question 2  [id q2, reference 1]"))
        #expect(human.stdout.contains("match offset 12.0") || human.stdout.contains("match offset 11.9"))
        #expect(human.stdout.contains("frequency skew") && human.stdout.contains("time skew") && human.stdout.contains("confidence"))

        // The signature of the clip matches as well as the audio.
        #expect(try ws.earshot("signature", "clip.wav", "-o", "clip.earsig").status == 0)
        #expect(try ws.earshot("match", "-c", "show.earcat", "clip.earsig").status == 0)

        // Audio that is not in the catalog: exit 1 and "noMatch".
        try AudioFixtures.writeWAV("other.wav", seed: 99, duration: 8, in: ws)
        let none = try ws.earshot("match", "-c", "show.earcat", "other.wav", "--json")
        #expect(none.status == 1, "\(none.stderr)")
        let noneJSON = try JSONValue.parse(none.stdout)
        #expect(noneJSON["result"]?.string == "noMatch")
        #expect(noneJSON["items"] == .array([]))
        let noneText = try ws.earshot("match", "-c", "show.earcat", "other.wav")
        #expect(noneText.status == 1 && noneText.stdout.contains("No match."))

        // A query longer than the catalog allows is cut to one window, with a note.
        let long = try ws.earshot("match", "-c", "show.earcat", "episode1.wav", "--start", "5", "--json")
        #expect(long.status == 0, "\(long.stderr)")
        #expect(long.stderr.contains("note: episode1.wav is 30.00 s long"))
        let longResult = try JSONValue.parse(long.stdout)
        #expect(longResult["items"]?[0]?["id"]?.string == "ep1")
        #expect(abs((longResult["items"]?[0]?["matchOffset"]?.double ?? 0) - 5) < 0.1)
        #expect(longResult["query"]?["duration"]?.double == 12)
    }


    /// Inputs are fingerprinted on every core at once, yet the catalog is the same as one made a
    /// file at a time (references in input order), and a bad file among good ones fails the
    /// command by its name and writes nothing.
    @Test func createUsesEveryCoreAndKeepsInputOrder() throws {
        let ws = try TemporaryDirectory()
        let names = (0..<6).map { "piece\($0).wav" }
        for (i, name) in names.enumerated() { try AudioFixtures.writeWAV(name, seed: 40 + UInt64(i), duration: Double(8 + 3 * i), in: ws) }
        let all = try ws.earshot(arguments: ["catalog", "create", "-o", "all.earcat"] + names)
        #expect(all.status == 0, "\(all.stderr)")
        for (i, name) in names.enumerated() { #expect(all.stderr.contains("[\(i + 1)/6] \(name)"), "\(all.stderr)") }
        // The same catalog, byte for byte, as one input at a time appended in order.
        let first = try ws.earshot("catalog", "create", "-o", "one.earcat", names[0])
        #expect(first.status == 0, "\(first.stderr)")
        for name in names.dropFirst() {
            let add = try ws.earshot("catalog", "add", "-c", "one.earcat", name)
            #expect(add.status == 0, "\(add.stderr)")
        }
        #expect(try Data(contentsOf: ws.url.appendingPathComponent("all.earcat")) == Data(contentsOf: ws.url.appendingPathComponent("one.earcat")))

        try ws.write("broken.wav", Array("RIFF not really a wave file".utf8))
        let bad = try ws.earshot(arguments: ["catalog", "create", "-o", "bad.earcat"] + names.prefix(3) + ["broken.wav"] + names.suffix(2))
        #expect(bad.status == 3 && bad.errorLines.first?.contains("broken.wav") == true, "\(bad.stderr)")
        #expect(!FileManager.default.fileExists(atPath: ws.url.appendingPathComponent("bad.earcat").path))
    }

    @Test func addUpdateAndRemove() throws {
        let ws = try TemporaryDirectory()
        for (name, seed) in [("a.wav", 11), ("b.wav", 12), ("c.wav", 13), ("d.wav", 14)] {
            try AudioFixtures.writeWAV(name, seed: UInt64(seed), duration: 20, in: ws)
        }
        #expect(try ws.earshot("catalog", "create", "-o", "c.earcat", "a.wav", "b.wav", "-q").status == 0)
        try ws.write("add.csv", text: "signature,id,title,timeRanges\nc.wav,c-intro,Intro,0-5\nc.wav,c-main,Main,\n")
        let add = try ws.earshot("catalog", "add", "-c", "c.earcat", "c.wav", "--media-items", "add.csv", "-q")
        #expect(add.status == 0, "\(add.stderr)")
        var catalog = try CustomCatalog(dataRepresentation: try ws.bytes("c.earcat"))
        #expect(catalog.references.map { $0.mediaItems.map(\.id) } == [["a"], ["b"], ["c-intro", "c-main"]])
        #expect(catalog.references[2].mediaItems[0].timeRanges == [0..<5])

        // An id already in the catalog is refused, and the catalog is left alone.
        let before = try ws.bytes("c.earcat")
        try ws.write("dup.csv", text: "signature,id\nd.wav,b\n")
        let dup = try ws.earshot("catalog", "add", "-c", "c.earcat", "d.wav", "--media-items", "dup.csv")
        #expect(dup.status == 3)
        #expect(dup.errorLines == [#"earshot: dup.csv: line 2, column id: id "b" is already used by reference 1 of c.earcat"#])
        #expect(try ws.bytes("c.earcat") == before)

        // update by reference index, adding an input and changing the query limits.
        try ws.write("update.csv", text: "reference,id,title\n0,alpha,Alpha\n0,alpha-2,Alpha two\n")
        let update = try ws.earshot("catalog", "update", "-c", "c.earcat", "--media-items", "update.csv", "d.wav",
                                    "--max-query", "20", "-q")
        #expect(update.status == 0, "\(update.stderr)")
        catalog = try CustomCatalog(dataRepresentation: try ws.bytes("c.earcat"))
        #expect(catalog.references.map { $0.mediaItems.map(\.id) } == [["alpha", "alpha-2"], ["b"], ["c-intro", "c-main"], ["d"]])
        #expect(catalog.maximumQuerySignatureDuration == 20)

        // update from an exported, edited CSV (rows name references by the exported file names).
        #expect(try ws.earshot("catalog", "export", "-c", "c.earcat", "-o", "out").status == 0)
        let exported = String(decoding: try ws.bytes("out/media-items.csv"), as: UTF8.self)
        try ws.write("out/media-items.csv", text: exported.replacingOccurrences(of: ",Main,", with: ",Main part,"))
        let reimport = try ws.earshot("catalog", "update", "-c", "c.earcat", "--media-items", "out/media-items.csv")
        #expect(reimport.status == 0, "\(reimport.stderr)")
        catalog = try CustomCatalog(dataRepresentation: try ws.bytes("c.earcat"))
        #expect(catalog.references[2].mediaItems.map(\.title) == ["Intro", "Main part"])
        #expect(catalog.references.count == 4)

        // remove: single items, then the reference that loses its last item, then by index.
        #expect(try ws.earshot("catalog", "remove", "-c", "c.earcat", "--id", "c-intro").status == 0)
        catalog = try CustomCatalog(dataRepresentation: try ws.bytes("c.earcat"))
        #expect(catalog.references[2].mediaItems.map(\.id) == ["c-main"])
        #expect(try ws.earshot("catalog", "remove", "-c", "c.earcat", "--id", "c-main").status == 0)
        catalog = try CustomCatalog(dataRepresentation: try ws.bytes("c.earcat"))
        #expect(catalog.references.map { $0.mediaItems.map(\.id) } == [["alpha", "alpha-2"], ["b"], ["d"]])
        let remove = try ws.earshot("catalog", "remove", "-c", "c.earcat", "--reference", "0", "--id", "d")
        #expect(remove.status == 0, "\(remove.stderr)")
        #expect(remove.stdout.hasPrefix("removed 2 references and 3 media items"))
        catalog = try CustomCatalog(dataRepresentation: try ws.bytes("c.earcat"))
        #expect(catalog.references.map { $0.mediaItems.map(\.id) } == [["b"]])

        // Naming what is not there is a usage error that changes nothing.
        let kept = try ws.bytes("c.earcat")
        let missing = try ws.earshot("catalog", "remove", "-c", "c.earcat", "--reference", "4")
        #expect(missing.status == 2)
        #expect(missing.errorLines == ["earshot: c.earcat: has no reference 4 (it has 1: 0…0)"])
        #expect(try ws.earshot("catalog", "remove", "-c", "c.earcat", "--id", "nope").status == 2)
        #expect(try ws.bytes("c.earcat") == kept)
    }

    @Test func exportCreateRoundTripAndMerge() throws {
        let ws = try TemporaryDirectory()
        try AudioFixtures.writeWAV("quiz.wav", seed: 21, duration: 30, in: ws)
        try AudioFixtures.writeWAV("intro.wav", seed: 22, duration: 20, in: ws)
        try AudioFixtures.writeWAV("extra.wav", seed: 23, duration: 20, in: ws)
        try ws.write("items.csv", text: #"""
            signature,id,title,subtitle,artist,genres,isrc,artworkURL,videoURL,webURL,explicitContent,creationDate,timeRanges,frequencySkewRanges,custom.question,x-Cue
            quiz.wav,q1,"Question 1, ""easy""",Quiz night,Host,Quiz;Game,USABC2400001,https://e.com/a.png,https://e.com/v.m3u8,https://e.com,no,2024-05-01,14-21;31-40.5,-0.02..<0.02,"{""text"":""2+2?"",""answer"":4}","""ad-break"""
            quiz.wav,q2,"Two
            lines",,,,,,,,yes,2024-05-01T20:15:00.125Z,21..<31,,"[true,null]",
            intro.wav,,Intro,,,,,,,,,,,,,

            """#)
        let create = try ws.earshot("catalog", "create", "-o", "quiz.earcat", "quiz.wav", "intro.wav",
                                    "--media-items", "items.csv", "--min-query", "2", "--max-query", "10", "-q")
        #expect(create.status == 0, "\(create.stderr)")

        let export = try ws.earshot("catalog", "export", "-c", "quiz.earcat", "-o", "exported")
        #expect(export.status == 0, "\(export.stderr)")
        let files = try FileManager.default.contentsOfDirectory(atPath: ws.path("exported")).sorted()
        #expect(files == ["000-q1.earsig", "001-intro.earsig", "media-items.csv"])

        let again = try ws.earshot("catalog", "create", "-o", "again.earcat", "exported/000-q1.earsig", "exported/001-intro.earsig",
                                   "--media-items", "exported/media-items.csv", "--min-query", "2", "--max-query", "10", "-q")
        #expect(again.status == 0, "\(again.stderr)")
        let original = try CustomCatalog(dataRepresentation: try ws.bytes("quiz.earcat"))
        let rebuilt = try CustomCatalog(dataRepresentation: try ws.bytes("again.earcat"))
        #expect(rebuilt == original)
        #expect(try ws.bytes("again.earcat") == ws.bytes("quiz.earcat"))
        #expect(original.references[0].mediaItems[1].title == "Two\nlines")
        // One date codec from the CSV through the catalog and back: fractional seconds survive.
        #expect(original.references[0].mediaItems[1].creationDate == Date(timeIntervalSince1970: 1_714_594_500.125))
        #expect(original.references[0].mediaItems[0].creationDate == Date(timeIntervalSince1970: 1_714_521_600))
        let exportedCSV = String(decoding: try ws.bytes("exported/media-items.csv"), as: UTF8.self)
        #expect(exportedCSV.contains(",2024-05-01T20:15:00.125Z,") && exportedCSV.contains(",2024-05-01,"), "\(exportedCSV)")
        #expect(original.references[0].mediaItems[0].customProperties["x-Cue"] == .string("ad-break"))

        // The exported signatures are the catalog's reference signatures.
        let exportedSignature = try Signature(dataRepresentation: try ws.bytes("exported/000-q1.earsig"))
        #expect(exportedSignature == original.references[0].signature)

        // merge: every reference of both inputs, in order; limits become the loosest.
        #expect(try ws.earshot("catalog", "create", "-o", "extra.earcat", "extra.wav", "--max-query", "15", "-q").status == 0)
        let merge = try ws.earshot("catalog", "merge", "-o", "all.earcat", "quiz.earcat", "extra.earcat")
        #expect(merge.status == 0, "\(merge.stderr)")
        let merged = try CustomCatalog(dataRepresentation: try ws.bytes("all.earcat"))
        let extra = try CustomCatalog(dataRepresentation: try ws.bytes("extra.earcat"))
        #expect(merged.references == original.references + extra.references)
        #expect(merged.minimumQuerySignatureDuration == 1)
        #expect(merged.maximumQuerySignatureDuration == 15)
    }

    @Test func helpTeachesTheCommands() throws {
        let ws = try TemporaryDirectory()
        let top = try ws.earshot("--help")
        #expect(top.status == 0)
        #expect(top.stdout.contains("Exit status:") && top.stdout.contains("1  `match` found no match"))
        for sub in ["signature", "catalog", "match", "listen", "devices"] { #expect(top.stdout.contains(sub)) }
        let create = try ws.earshot("catalog", "create", "--help")
        for column in ["signature (or file)", "timeRanges", "frequencySkewRanges", "custom.<key>", "-0.02..<-0.01", "Example"] {
            #expect(create.stdout.contains(column), "create --help lacks \(column)")
        }
        for sub in ["add", "update", "remove", "display", "export", "merge"] {
            let help = try ws.earshot("catalog", sub, "--help")
            #expect(help.status == 0 && help.stdout.contains("Example"), "catalog \(sub) --help")
        }
        let match = try ws.earshot("match", "--help")
        #expect(match.stdout.contains("1 when nothing did"))
    }

    @Test func usageErrorsExitWithTwo() throws {
        let ws = try TemporaryDirectory()
        let noInputs = try ws.earshot("catalog", "create", "-o", "x.earcat")
        #expect(noInputs.status == 2)
        #expect(noInputs.stderr.hasPrefix("earshot: give at least one input file"))
        #expect(try ws.earshot("catalog", "create", "-o", "x.earcat", "a.wav", "--min-query", "5", "--max-query", "2").status == 2)
        #expect(try ws.earshot("match", "clip.wav").status == 2)
        #expect(try ws.earshot("catalog", "remove", "-c", "x.earcat").status == 2)
        #expect(try ws.earshot("frobnicate").status == 2)
        #expect(!ws.exists("x.earcat"))
    }
}
