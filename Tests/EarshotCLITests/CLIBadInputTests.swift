import EarshotCore
import EarshotTestSupport
import Foundation
import Testing

/// Files every bad-input test starts from, made once: a reference recording, its signature,
/// a catalog of it and a valid media-items CSV.
private let badInputFixture = Result { () throws -> TemporaryDirectory in
    let ws = try TemporaryDirectory(removedAtExit: true)
    try AudioFixtures.writeWAV("ref.wav", seed: 31, duration: 20, in: ws)
    let signature = try ws.earshot("signature", "ref.wav", "-o", "ref.earsig")
    guard signature.status == 0 else { throw FixtureFailure(step: "signature", run: signature) }
    let catalog = try ws.earshot("catalog", "create", "-o", "good.earcat", "ref.earsig", "-q")
    guard catalog.status == 0 else { throw FixtureFailure(step: "catalog create", run: catalog) }
    return ws
}

private struct FixtureFailure: Error, CustomStringConvertible {
    var step: String
    var run: CLIHarness.Run
    var description: String { "fixture step \(step) failed with \(run.status): \(run.stderr)" }
}

/// One bad input: how to make it, the command that reads it, and what must happen.
struct BadInputCase: CustomTestStringConvertible, Sendable {
    var name: String
    /// Creates the bad file(s) in the test's workspace (which already holds the fixture files
    /// plus `out.earcat`, a copy of the good catalog, and `target.earcat`, another copy).
    var prepare: @Sendable (TemporaryDirectory) throws -> Void
    var arguments: [String]
    /// Text the single error line must contain (besides `earshot: ` and `file`).
    var file: String
    var problem: String
    var status: Int32 = 3
    var testDescription: String { name }
}

/// Bytes of the good catalog with `transform` applied.
private func catalogBytes(_ ws: TemporaryDirectory, _ transform: ([UInt8]) -> [UInt8]) throws -> [UInt8] {
    transform(try ws.bytes("good.earcat"))
}

private func badCSV(_ text: String) -> @Sendable (TemporaryDirectory) throws -> Void {
    { ws in try ws.write("bad.csv", text: text) }
}

private let createWithCSV = ["catalog", "create", "-o", "out.earcat", "ref.earsig", "--media-items", "bad.csv"]

private let badInputCases: [BadInputCase] = [
    BadInputCase(name: "missing input file", prepare: { _ in }, arguments: ["catalog", "create", "-o", "out.earcat", "missing.wav"],
                 file: "missing.wav", problem: "no such file"),
    BadInputCase(name: "missing catalog", prepare: { _ in }, arguments: ["match", "-c", "nowhere.earcat", "ref.earsig"],
                 file: "nowhere.earcat", problem: "no such file"),
    BadInputCase(name: "missing CSV", prepare: { _ in }, arguments: ["catalog", "create", "-o", "out.earcat", "ref.earsig", "--media-items", "no.csv"],
                 file: "no.csv", problem: "no such file"),
    BadInputCase(name: "truncated catalog to add to", prepare: { ws in
        try ws.write("target.earcat", try catalogBytes(ws) { Array($0.prefix($0.count / 2)) })
    }, arguments: ["catalog", "add", "-c", "target.earcat", "ref.wav"], file: "target.earcat", problem: "truncated"),
    BadInputCase(name: "truncated catalog to match", prepare: { ws in
        try ws.write("target.earcat", try catalogBytes(ws) { Array($0.prefix(60)) })
    }, arguments: ["match", "-c", "target.earcat", "ref.earsig"], file: "target.earcat", problem: "truncated"),
    BadInputCase(name: "bit-flipped catalog to update", prepare: { ws in
        try ws.write("target.earcat", try catalogBytes(ws) { bytes in
            var b = bytes
            b[b.count / 2] ^= 0x20
            return b
        })
    }, arguments: ["catalog", "update", "-c", "target.earcat", "--max-query", "20"], file: "target.earcat", problem: "checksum mismatch"),
    BadInputCase(name: "bit-flipped catalog header to display", prepare: { ws in
        try ws.write("target.earcat", try catalogBytes(ws) { bytes in
            var b = bytes
            b[40] ^= 0x01
            return b
        })
    }, arguments: ["catalog", "display", "-c", "target.earcat"], file: "target.earcat", problem: "checksum mismatch"),
    BadInputCase(name: "foreign file named .earcat", prepare: { ws in
        try ws.write("target.earcat", text: "these are my notes, not a catalog\n")
    }, arguments: ["catalog", "remove", "-c", "target.earcat", "--reference", "0"], file: "target.earcat", problem: "not an Earshot catalog"),
    BadInputCase(name: "foreign catalog among merge inputs", prepare: { ws in
        try ws.write("notes.earcat", text: "hello")
    }, arguments: ["catalog", "merge", "-o", "out.earcat", "good.earcat", "notes.earcat"], file: "notes.earcat", problem: "not an Earshot catalog"),
    BadInputCase(name: "empty catalog file", prepare: { ws in try ws.write("target.earcat", []) },
                 arguments: ["catalog", "export", "-c", "target.earcat", "-o", "exported"], file: "target.earcat", problem: "empty"),
    BadInputCase(name: "wrong-version signature", prepare: { ws in
        var b = try ws.bytes("ref.earsig")
        b[8] = 9
        try ws.write("v9.earsig", b)
    }, arguments: ["catalog", "create", "-o", "out.earcat", "v9.earsig"], file: "v9.earsig", problem: "unsupported signature format version 9"),
    BadInputCase(name: "truncated signature", prepare: { ws in
        try ws.write("short.earsig", Array(try ws.bytes("ref.earsig").dropLast(5)))
    }, arguments: ["catalog", "add", "-c", "out.earcat", "short.earsig"], file: "short.earsig", problem: "truncated"),
    BadInputCase(name: "corrupt signature peaks", prepare: { ws in
        var b = try ws.bytes("ref.earsig")
        b[b.count - 3] ^= 0xFF
        try ws.write("flip.earsig", b)
    }, arguments: ["match", "-c", "good.earcat", "flip.earsig"], file: "flip.earsig", problem: "checksum mismatch"),
    BadInputCase(name: "foreign file named .earsig", prepare: { ws in try ws.write("notes.earsig", text: "{\"not\": \"a signature\"}") },
                 arguments: ["catalog", "create", "-o", "out.earcat", "notes.earsig"], file: "notes.earsig", problem: "not an Earshot signature"),
    BadInputCase(name: "text file posing as audio", prepare: { ws in try ws.write("song.wav", text: "RIFF? no, just text") },
                 arguments: ["catalog", "create", "-o", "out.earcat", "song.wav"], file: "song.wav", problem: "not a recognised audio file"),
    BadInputCase(name: "truncated WAV as query", prepare: { ws in
        try ws.write("cut.wav", Array(try ws.bytes("ref.wav").prefix(30)))
    }, arguments: ["match", "-c", "good.earcat", "cut.wav"], file: "cut.wav", problem: "truncated or corrupt"),
    BadInputCase(name: "catalog given as an input", prepare: { _ in },
                 arguments: ["catalog", "create", "-o", "out.earcat", "good.earcat"], file: "good.earcat", problem: "is an Earshot catalog"),
    BadInputCase(name: "query shorter than the catalog's minimum", prepare: { ws in
        try AudioFixtures.writeExcerpt("blip.wav", of: AudioFixtures.music(seed: 31, duration: 2), from: 0, length: 0.5, in: ws)
    }, arguments: ["match", "-c", "good.earcat", "blip.wav"], file: "blip.wav", problem: "needs at least"),
    BadInputCase(name: "CSV with an unclosed quote", prepare: badCSV("signature,title\nref.earsig,\"open\n"),
                 arguments: createWithCSV, file: "bad.csv", problem: "line 2, field 2: the quoted field opened here is never closed"),
    BadInputCase(name: "CSV with a stray quote", prepare: badCSV("signature,title\nref.earsig,say \"hi\"\n"),
                 arguments: createWithCSV, file: "bad.csv", problem: "line 2, field 2: a quote inside an unquoted field"),
    BadInputCase(name: "CSV with an unknown column", prepare: badCSV("signature,titel\nref.earsig,x\n"),
                 arguments: createWithCSV, file: "bad.csv", problem: "line 1, column titel: unknown column"),
    BadInputCase(name: "CSV with a bad number", prepare: badCSV("signature,timeRanges\nref.earsig,1..<two\n"),
                 arguments: createWithCSV, file: "bad.csv", problem: "line 2, column timeRanges: \"1..<two\" has a bound that is not a number"),
    BadInputCase(name: "CSV with bad range syntax", prepare: badCSV("signature,id,timeRanges\nref.earsig,a,1-2\nref.earsig,b,14:21\n"),
                 arguments: createWithCSV, file: "bad.csv", problem: "line 3, column timeRanges: \"14:21\" is not a range"),
    BadInputCase(name: "CSV with invalid JSON", prepare: badCSV("signature,custom.question\nref.earsig,{answer: 4}\n"),
                 arguments: createWithCSV, file: "bad.csv", problem: "line 2, column custom.question: not a valid JSON value"),
    BadInputCase(name: "CSV row naming no input", prepare: badCSV("signature,title\nref.earsig,A\nother.wav,B\n"),
                 arguments: createWithCSV, file: "bad.csv", problem: "line 3, column signature: \"other.wav\" names no input file"),
    BadInputCase(name: "CSV that is not UTF-8", prepare: { ws in try ws.write("bad.csv", Array("signature,title\n".utf8) + [0xC3, 0x28, 0x0A]) },
                 arguments: createWithCSV, file: "bad.csv", problem: "not UTF-8"),
    BadInputCase(name: "malformed CSV for update", prepare: badCSV("reference,title\nzero,x\n"),
                 arguments: ["catalog", "update", "-c", "target.earcat", "--media-items", "bad.csv"], file: "bad.csv",
                 problem: "line 2, column reference: \"zero\" is not a reference index"),
    BadInputCase(name: "--start past the end of the query", prepare: { _ in },
                 arguments: ["match", "-c", "good.earcat", "ref.earsig", "--start", "99"], file: "ref.earsig", problem: "past the end", status: 2),
    // Every command checks a catalog the way the daemon does, in full.
    BadInputCase(name: "catalog with a flipped bit in its index to match", prepare: { ws in
        try ws.write("target.earcat", try catalogBytes(ws) { bytes in
            var b = bytes
            let postings = sectionRange(8, in: b)
            b[postings.lowerBound + postings.count / 2] ^= 0x08
            return b
        })
    }, arguments: ["match", "-c", "target.earcat", "ref.earsig"], file: "target.earcat", problem: "checksum mismatch in section postings"),
    BadInputCase(name: "catalog with zeros appended to display", prepare: { ws in
        try ws.write("target.earcat", try catalogBytes(ws) { $0 + [UInt8](repeating: 0, count: 16) })
    }, arguments: ["catalog", "display", "-c", "target.earcat"], file: "target.earcat", problem: "16 unexpected bytes after the last section"),
    // Audio inputs: one line whatever the decoder libraries think of the file.
    BadInputCase(name: "text file named .mp3", prepare: { ws in try ws.write("x.mp3", text: "hello, this is not music\n") },
                 arguments: ["match", "-c", "good.earcat", "x.mp3"], file: "x.mp3", problem: "may be truncated or corrupt"),
    BadInputCase(name: "random bytes named .mp3", prepare: { ws in try ws.write("noise.mp3", AudioFixtures.noise(count: 5000, seed: 5)) },
                 arguments: ["match", "-c", "good.earcat", "noise.mp3"], file: "noise.mp3", problem: "corrupt"),
    BadInputCase(name: "MP3 with a stretch of zeros", prepare: { ws in
        try AudioFixtures.writeMP3("whole.mp3", from: "ref.wav", in: ws)
        var b = try ws.bytes("whole.mp3")
        b.replaceSubrange((b.count / 3)..<(2 * b.count / 3), with: [UInt8](repeating: 0, count: 2 * b.count / 3 - b.count / 3))
        try ws.write("zeros.mp3", b)
    }, arguments: ["match", "-c", "good.earcat", "zeros.mp3"], file: "zeros.mp3", problem: "truncated or corrupt"),
    BadInputCase(name: "empty .wav", prepare: { ws in try ws.write("empty.wav", []) },
                 arguments: ["match", "-c", "good.earcat", "empty.wav"], file: "empty.wav", problem: "empty"),
    BadInputCase(name: "directory named .wav", prepare: { ws in try FileManager.default.createDirectory(atPath: ws.path("d.wav"), withIntermediateDirectories: false) },
                 arguments: ["match", "-c", "good.earcat", "d.wav"], file: "d.wav", problem: "is a directory"),
    BadInputCase(name: "FIFO named .wav", prepare: { ws in try makeFIFO(ws.path("f.wav")) },
                 arguments: ["match", "-c", "good.earcat", "f.wav"], file: "f.wav", problem: "is a named pipe, not a regular file"),
    BadInputCase(name: "FIFO named .earcat", prepare: { ws in try makeFIFO(ws.path("f.earcat")) },
                 arguments: ["match", "-c", "f.earcat", "ref.earsig"], file: "f.earcat", problem: "is a named pipe, not a regular file"),
    BadInputCase(name: "FIFO as the media-items CSV", prepare: { ws in try makeFIFO(ws.path("f.csv")) },
                 arguments: ["catalog", "create", "-o", "out.earcat", "ref.earsig", "--media-items", "f.csv"], file: "f.csv",
                 problem: "is a named pipe, not a regular file"),
] + ["wav", "flac", "ogg", "opus"].enumerated().map { index, ext in
    BadInputCase(name: "random bytes named .\(ext)", prepare: { ws in
        try ws.write("noise.\(ext)", AudioFixtures.noise(count: 5000, seed: UInt64(index)))
    }, arguments: ["match", "-c", "good.earcat", "noise.\(ext)"], file: "noise.\(ext)", problem: "not a recognised audio file")
}

/// Where section `kind` (4: values) of a catalog image lies, from its section table.
private func sectionRange(_ kind: UInt32, in bytes: [UInt8]) -> Range<Int> {
    func load<T: FixedWidthInteger>(_ at: Int, _: T.Type) -> T {
        bytes[at..<(at + MemoryLayout<T>.size)].reversed().reduce(0) { $0 << 8 | T($1) }
    }
    let entry = (0..<Int(load(12, UInt16.self))).map { 96 + 32 * $0 }.first { load($0, UInt32.self) == kind }!
    let offset = Int(load(entry + 8, UInt64.self)), length = Int(load(entry + 16, UInt64.self))
    return offset..<(offset + length)
}

private func makeFIFO(_ path: String) throws {
    guard mkfifo(path, 0o644) == 0 else { throw CocoaError(.fileWriteUnknown) }
}

@Suite("earshot CLI bad input")
struct CLIBadInputTests {
    /// A damaged MP3 that still decodes makes libmpg123 complain on stderr; none of that reaches
    /// the user, who gets the signature and nothing else.
    @Test func decoderChatterNeverReachesTheTerminal() throws {
        let fixture = try badInputFixture.get()
        let ws = try TemporaryDirectory()
        try ws.copy("ref.wav", from: fixture)
        try AudioFixtures.writeMP3("whole.mp3", from: "ref.wav", in: ws)
        var b = try ws.bytes("whole.mp3")
        for i in stride(from: b.count / 3, to: 2 * b.count / 3, by: 997) { b[i] ^= 0xFF }
        try ws.write("damaged.mp3", b)
        let run = try ws.earshot("signature", "damaged.mp3", "-o", "damaged.earsig")
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(ws.exists("damaged.earsig"))
        #expect(run.stderr.isEmpty, "stderr: \(run.stderr)")
    }

    /// Every bad input exits non-zero with one `earshot: <file>: <problem>` line, and the files a
    /// command would write (`out.earcat`, the edited `target.earcat`) are byte-identical afterwards.
    @Test(arguments: badInputCases)
    func badInputFailsCleanly(_ badCase: BadInputCase) throws {
        let fixture = try badInputFixture.get()
        let ws = try TemporaryDirectory()
        for name in ["ref.wav", "ref.earsig", "good.earcat"] { try ws.copy(name, from: fixture) }
        try ws.copy("good.earcat", from: fixture, as: "out.earcat")
        try ws.copy("good.earcat", from: fixture, as: "target.earcat")
        try badCase.prepare(ws)
        let protected = try ["out.earcat", "target.earcat", "good.earcat"].map { try ws.bytes($0) }

        let run = try ws.earshot(arguments: badCase.arguments)

        #expect(run.status == badCase.status, "stderr: \(run.stderr)")
        // One line and nothing else: no notes, no progress, no decoder library chatter.
        #expect(run.errorLines.count == 1, "stderr: \(run.stderr)")
        #expect(run.stderr.split(separator: "\n").count == 1, "stderr: \(run.stderr)")
        let line = run.errorLines.first ?? ""
        #expect(line.hasPrefix("earshot: \(badCase.file): "), "got: \(line)")
        #expect(line.contains(badCase.problem), "got: \(line)")
        #expect(!line.contains("EarshotError") && !line.contains("Fatal error"), "got: \(line)")
        #expect(try ["out.earcat", "target.earcat", "good.earcat"].map { try ws.bytes($0) } == protected)
        #expect(!ws.exists("exported"))
        // No temporary files are left beside the outputs.
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: ws.url.path).filter { $0.hasPrefix(".") }
        #expect(leftovers.isEmpty, "left behind: \(leftovers)")
    }
}
