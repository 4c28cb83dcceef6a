import EarshotTestSupport
import Foundation
import SQLite
import Testing

/// Text crossing into SQLite: bound text comes back byte for byte and compares byte for byte (a
/// NUL inside included), and a path with a NUL inside is refused, never cut at it.
struct SQLiteTextTests {
    @Test func textRoundTripsAndComparesByteForByte() throws {
        let folder = try TemporaryDirectory("earshot-sqlite")
        let db = try SQLiteConnection(path: folder.path("t.db"))
        try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)")
        let values = HostileText.samples(400, seed: 7) + ["viewer", "viewer\u{0}x", "viewer\u{0}", ""]
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

    @Test func aPathWithANULIsRefusedAndNothingIsMadeAtThePartBeforeIt() throws {
        let paths = try PathsWithANUL()
        for bad in paths.cases.map(\.made) {
            do {
                _ = try SQLiteConnection(path: bad)
                Issue.record("SQLite opened \(bad.debugDescription)")
            } catch { #expect("\(error)".contains("NUL")) }
            #expect(paths.untouched, "nothing was made at the part before the NUL")
        }
    }
}
