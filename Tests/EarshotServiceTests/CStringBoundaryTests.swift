import EarshotCore
import EarshotSystem
import EarshotTestSupport
import Foundation
import SQLite
import Testing

@testable import EarshotAudio
@testable import EarshotTransport

/// Property tests over every place a Swift string crosses into C: text bound into SQLite comes
/// back byte for byte and compares byte for byte (a NUL inside included); paths, devices and
/// endpoints with a NUL inside are refused, never cut at it to name something else.
@Suite struct CStringBoundaryTests {
    /// Strings built from pieces a hostile client would mix: NUL and other C0 and C1 controls,
    /// DEL, backslashes, quotes, multi-byte and astral characters, combining marks.
    static func samples(_ count: Int, seed: UInt64) -> [String] {
        let pieces = ["a", "viewer", "\u{0}", "\u{1}", "\u{1B}[2J", "\n", "\r", "\t", "\u{7F}", "\u{85}", "\u{9F}", "\\",
                      "\"", "'", "%", "é", "e\u{301}", "🎵", "\u{FEFF}", "\u{2028}", "/", "..", " "]
        var rng = SeededRandom(seed: seed)
        return (0..<count).map { _ in
            (0..<Int.random(in: 0...8, using: &rng)).map { _ in pieces.randomElement(using: &rng)! }.joined()
        }
    }

    @Test func sqliteTextRoundTripsAndComparesByteForByte() throws {
        let folder = try TemporaryFolder()
        let db = try SQLiteConnection(path: folder.path("t.db"))
        try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)")
        let values = Self.samples(400, seed: 7) + ["viewer", "viewer\u{0}x", "viewer\u{0}", ""]
        for (i, v) in values.enumerated() { _ = try db.run("INSERT INTO t (id, v) VALUES (?, ?)", [.integer(Int64(i)), .text(v)]) }
        for (i, v) in values.enumerated() {
            let back = try db.scalar("SELECT v FROM t WHERE id = ?", [.integer(Int64(i))])
            #expect(back == .text(v), "\(v.debugDescription) came back as \(String(describing: back))")
            #expect(try db.scalar("SELECT length(CAST(v AS BLOB)) FROM t WHERE id = ?", [.integer(Int64(i))]) == .integer(Int64(v.utf8.count)))
            let equal = try db.scalar("SELECT count(*) FROM t WHERE v = ?", [.text(v)])
            #expect(equal == .integer(Int64(values.filter { Array($0.utf8) == Array(v.utf8) }.count)), "\(v.debugDescription)")
        }
        #expect(try db.scalar("SELECT count(*) FROM t WHERE v = ?", [.text("viewer\u{0}anything")]) == .integer(0))
    }

    @Test func pathsWithANULAreRefusedAndNothingIsMadeAtThePartBeforeIt() throws {
        let folder = try TemporaryFolder()
        try Data("x".utf8).write(to: URL(fileURLWithPath: folder.path("real")))
        for suffix in ["\u{0}", "\u{0}x", "\u{0}/../escape"] {
            let bad = folder.path("made") + suffix
            let existing = folder.path("real") + suffix
            func refused(_ what: String, _ body: () throws(SystemError) -> Void) {
                do throws(SystemError) {
                    try body()
                    Issue.record("\(what) accepted \(bad.debugDescription)")
                } catch { #expect(error.code == EINVAL && error.message.contains("NUL"), "\(what): \(error)") }
            }
            refused("AtomicFile.write") { () throws(SystemError) in try AtomicFile.write([1], to: bad) }
            refused("AtomicFile.read") { () throws(SystemError) in _ = try AtomicFile.read(existing) }
            refused("PartFile") { () throws(SystemError) in _ = try PartFile(path: bad) }
            refused("Directory.create") { () throws(SystemError) in try Directory.create(bad) }
            refused("Directory.remove") { () throws(SystemError) in try Directory.remove(existing) }
            refused("Directory.rename from") { () throws(SystemError) in try Directory.rename(existing, to: folder.path("other")) }
            refused("Directory.rename to") { () throws(SystemError) in try Directory.rename(folder.path("real"), to: bad) }
            refused("Directory.names") { () throws(SystemError) in _ = try Directory.names(in: folder.path("") + suffix) }
            refused("MappedFile") { () throws(SystemError) in _ = try MappedFile(path: existing) }
            refused("RegularFile") { () throws(SystemError) in _ = try RegularFile.openForReading(existing) }
            refused("DirectoryWatcher") { () throws(SystemError) in _ = try DirectoryWatcher(path: folder.path("") + suffix) }
            #expect(FileIdentity(path: existing) == nil)
            #expect(Directory.availableBytes(at: folder.path("") + suffix) == nil)
            #expect(!Directory.setMode(existing, 0o600))
            do {
                _ = try SQLiteConnection(path: bad)
                Issue.record("SQLite opened \(bad.debugDescription)")
            } catch { #expect("\(error)".contains("NUL")) }
            do {
                _ = try AudioFileReader(path: existing)
                Issue.record("AudioFileReader opened \(existing.debugDescription)")
            } catch { #expect(error.message.contains("NUL")) }
            #expect(FileManager.default.fileExists(atPath: folder.path("real")), "the file before the NUL is untouched")
            #expect(!FileManager.default.fileExists(atPath: folder.path("made")), "nothing was made at the part before the NUL")
        }
    }

    @Test func devicesAndEndpointsWithANULAreRefused() throws {
        for device in ["default\u{0}", "hw:0\u{0}x"] {
            #expect(throws: EarshotError.self) { try AlsaCaptureConfiguration(device: device).validate() }
        }
        let socket = try ZMQSocket(.pub)
        defer { socket.close() }
        for endpoint in ["tcp://127.0.0.1:0\u{0}", "inproc://boundary\u{0}x", "ipc:///tmp/earshot-boundary\u{0}x"] {
            #expect(throws: TransportError.self) { try socket.bind(endpoint) }
            #expect(throws: TransportError.self) { try socket.connect(endpoint) }
        }
    }

    @Test func namesFollowTheRuleAndEscapedTextIsPrintableAndFaithful() {
        let samples = Self.samples(2000, seed: 11)
        var seen: [[UInt8]: String] = [:]  // by bytes: String's == equates canonically equivalent text
        for s in samples {
            let hasControl = s.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }
            #expect((NameRule.problem(s, as: "name") == nil) == (!hasControl && s.utf8.count <= NameRule.maximumBytes))
            let escaped = s.escapingControlCharacters
            let escapedHasControl = escaped.unicodeScalars.contains { $0.isControlCharacter }
            #expect(!escapedHasControl, "\(s.debugDescription) → \(escaped.debugDescription)")
            // Different texts never escape alike, so a log line always tells them apart.
            if let other = seen[Array(escaped.utf8)] { #expect(Array(other.utf8) == Array(s.utf8), "\(other.debugDescription) and \(s.debugDescription)") }
            seen[Array(escaped.utf8)] = s
        }
        #expect("plain text: é 🎵".escapingControlCharacters == "plain text: é 🎵")
        #expect("a\u{0}b\nc\\".escapingControlCharacters == "a\\u{0}b\\nc\\\\")
    }
}

/// A folder removed when the value goes.
final class TemporaryFolder {
    let url: URL
    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("earshot-boundary-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    func path(_ name: String) -> String { name.isEmpty ? url.path : url.appendingPathComponent(name).path }
    deinit { try? FileManager.default.removeItem(at: url) }
}
