import EarshotStore
import EarshotSystem
import EarshotTestSupport
import Foundation
import SQLite
import Testing

/// Damaged library databases: a valid file with items, then copies with bits flipped, cut
/// short or replaced by something else. Opening one fails with `.dataLoss` and leaves it as it
/// is; `setAside` moves it (with its WAL) out of the way, byte for byte, and a new database
/// takes its place. A WAL's committed transactions are recovered, and a damaged WAL frame
/// loses its transaction only.
@Suite struct LibraryDamageTests {
    typealias F = LibraryFixture
    let scratch: TemporaryDirectory

    init() throws { scratch = try TemporaryDirectory("earshot-library") }

    static let stamp = "20250102T030405Z"

    /// Ways to damage a database file.
    enum Damage: String, CaseIterable, CustomStringConvertible, Sendable {
        /// A bit of the "SQLite format 3" magic.
        case headerMagic
        /// A bit of the page size (4096 becomes 4097).
        case headerPageSize
        /// A bit of the page type of a b-tree page in the middle of the file.
        case middlePageType
        /// The high bit of the first cell pointer of the last page (past the page's end).
        case lastPageCellPointer
        case truncatedToHalf
        case truncatedTo100Bytes
        /// Cut to a size that is not a multiple of the page size.
        case truncatedMidPage
        /// Random bytes instead of a database.
        case randomBytes
        /// A text file instead of a database.
        case textFile

        var description: String { rawValue }

        func apply(to valid: [UInt8]) throws -> [UInt8] {
            var bytes = valid
            let pageSize = LibraryDamageTests.pageSize(valid)
            let pages = valid.count / pageSize
            switch self {
            case .headerMagic:
                bytes[0] ^= 0x01
            case .headerPageSize:
                bytes[17] ^= 0x01
            case .middlePageType:
                let offset = (pages / 2) * pageSize  // page pages/2 + 1, never page 1
                try #require([2, 5, 10, 13].contains(bytes[offset]), "a b-tree page")
                bytes[offset] ^= 0x80
            case .lastPageCellPointer:
                let offset = (pages - 1) * pageSize
                let type = bytes[offset]
                try #require([2, 5, 10, 13].contains(type), "a b-tree page")
                try #require(Int(bytes[offset + 3]) << 8 | Int(bytes[offset + 4]) >= 1, "with cells")
                let pointers = offset + (type == 2 || type == 5 ? 12 : 8)
                try #require(bytes[pointers] & 0x80 == 0)
                bytes[pointers] ^= 0x80
            case .truncatedToHalf:
                bytes = Array(valid.prefix(valid.count / 2))
            case .truncatedTo100Bytes:
                bytes = Array(valid.prefix(100))
            case .truncatedMidPage:
                bytes = Array(valid.prefix(valid.count - pageSize - 1000))
            case .randomBytes:
                var random = SeededRandom(seed: 77)
                bytes = (0..<65_536).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            case .textFile:
                bytes = Array(String(repeating: "this is not a library database, only text\n", count: 200).utf8)
            }
            return bytes
        }
    }

    static func pageSize(_ bytes: [UInt8]) -> Int {
        let raw = Int(bytes[16]) << 8 | Int(bytes[17])
        return raw == 1 ? 65_536 : raw
    }

    /// A valid, closed database with two owners' items at `path` (several hundred pages, all in
    /// the main file), and alice's items.
    static func makeValid(_ path: String) throws -> [LibraryItem] {
        let items: [LibraryItem]
        do {
            let db = try LibraryDatabase(path: path)
            for batch in 0..<3 {
                _ = try db.add((0..<100).map { F.entry(Int64(batch * 100 + $0), size: 500, seed: batch * 100 + $0) }, owner: "alice", nowMs: 1)
                _ = try db.add((0..<20).map { F.entry(Int64($0), size: 300, seed: -$0) }, owner: "bob", nowMs: 1)
            }
            items = try F.all(db, owner: "alice")
        }
        // Checkpointed into the main file, so damage hits the real data.
        do {
            let raw = try SQLiteConnection(path: path)
            try raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            #expect(try raw.quickCheck().isEmpty)
        }
        try #require(!LibraryFile.exists(path + "-wal") && !LibraryFile.exists(path + "-shm"))
        try #require(LibraryFile.read(path).count >= 40 * 4096)
        return items
    }

    /// Sets `path` aside and checks that exactly its files moved, byte for byte, and that a new
    /// database can be made in its place.
    func setAsideAndStartOver(_ path: String, expecting files: [String: [UInt8]]) throws {
        let aside = try LibraryDatabase.setAside(path, stamp: Self.stamp)
        #expect(aside == path + ".damaged-" + Self.stamp)
        for suffix in ["", "-wal", "-shm"] {
            #expect(!LibraryFile.exists(path + suffix), "\(suffix) moved")
            if let bytes = files[suffix] {
                #expect(try LibraryFile.read(aside + suffix) == bytes, "\(suffix) byte-identical")
            } else {
                #expect(!LibraryFile.exists(aside + suffix), "no \(suffix)")
            }
        }
        let fresh = try LibraryDatabase(path: path)
        #expect(try fresh.schemaVersion() == LibrarySchema.currentVersion)
        #expect(try fresh.owners().isEmpty)
        #expect(try fresh.add([F.entry(1, seed: 1)], owner: "alice", nowMs: 1).owner.version == 1)
        #expect(fresh.ownerHash("alice") != "")
        // The damaged file is still there, as it was.
        #expect(try LibraryFile.read(aside) == files[""])
    }

    /// The files next to `path` that the open left, with their bytes.
    func files(_ path: String) throws -> [String: [UInt8]] {
        var out: [String: [UInt8]] = [:]
        for suffix in ["", "-wal", "-shm"] where LibraryFile.exists(path + suffix) {
            out[suffix] = try LibraryFile.read(path + suffix)
        }
        return out
    }

    @Test(arguments: Damage.allCases)
    func aDamagedFileFailsWithDataLossAndIsSetAside(damage: Damage) throws {
        let path = scratch.path("library.db")
        _ = try Self.makeValid(path)
        let damaged = try damage.apply(to: LibraryFile.read(path))
        try LibraryFile.write(damaged, to: path)

        #expect(F.failure { _ = try LibraryDatabase(path: path) } == .dataLoss)
        #expect(F.failure { _ = try LibraryDatabase(path: path, readOnly: true) } == .dataLoss)
        // The failed opens changed nothing: the damaged file is left for setAside.
        #expect(try LibraryFile.read(path) == damaged)
        let left = try files(path)
        #expect((left["-wal"] ?? []).isEmpty, "no WAL content appeared")
        try setAsideAndStartOver(path, expecting: left)
    }

    @Test func aZeroLengthFileIsAnEmptyDatabase() throws {
        // SQLite treats an empty file as an empty database: it is not damage, and the library
        // creates its schema in it.
        let path = scratch.path("library.db")
        try LibraryFile.write([], to: path)
        let added: [LibraryItem]
        do {
            let db = try LibraryDatabase(path: path)
            #expect(try db.schemaVersion() == LibrarySchema.currentVersion)
            #expect(try db.owners().isEmpty)
            added = try db.add([F.entry(1, seed: 1)], owner: "alice", nowMs: 1).items
        }
        #expect(try LibraryFile.read(path).count > 0)
        #expect(try F.all(LibraryDatabase(path: path, readOnly: true), owner: "alice") == added)
    }

    @Test func aFlippedBitInsideABodyIsNotSeenAndReachesThatItemOnly() throws {
        // quick_check does not read record contents, and SQLite keeps no checksums: a flipped
        // bit inside an item's body is not found at open. What the damage can reach is that one
        // value; every other item reads back as it was.
        let path = scratch.path("library.db")
        let items = try Self.makeValid(path)
        var bytes = try LibraryFile.read(path)
        let target = items[150].entry.body
        let needle = Array(target.prefix(64))
        let at = try #require(Self.find(needle, in: bytes))
        try #require(Self.find(needle, in: bytes, from: at + 1) == nil, "the body is stored once")
        bytes[at + 10] ^= 0x01
        try LibraryFile.write(bytes, to: path)

        let db = try LibraryDatabase(path: path, readOnly: true)
        let after = try F.all(db, owner: "alice")
        #expect(after.map(\.id) == items.map(\.id))
        for (a, b) in zip(after, items) where a.id != items[150].id { #expect(a == b) }
        #expect(after[150].entry.body != target, "the one damaged value")
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int = 0) -> Int? {
        guard needle.count <= haystack.count, start <= haystack.count - needle.count else { return nil }
        for i in start...(haystack.count - needle.count) where haystack[i] == needle[0] {
            if Array(haystack[i..<(i + needle.count)]) == needle { return i }
        }
        return nil
    }

    // MARK: The WAL

    /// A database whose last transaction is only in its WAL, as after a crash: alice's
    /// checkpointed items, and the items of the transaction in the WAL.
    func crashed(_ path: String) throws -> (checkpointed: [LibraryItem], inWAL: [LibraryItem], owner: LibraryOwner) {
        let original = scratch.path("original.db")
        let checkpointed = try Self.makeValid(original)
        let writer = try LibraryDatabase(path: original)
        let commit = try writer.add((0..<5).map { F.entry(Int64(10_000 + $0), size: 200, seed: 5000 + $0) }, owner: "alice", nowMs: 2)
        // Committed and synced; copied while the writer is still open (nothing checkpointed yet).
        let wal = try LibraryFile.read(original + "-wal")
        try #require(wal.count > 32 + 24 + 4096, "the transaction is in the WAL")
        try LibraryFile.copy(original, to: path)
        try LibraryFile.write(wal, to: path + "-wal")
        withExtendedLifetime(writer) {}
        return (checkpointed, commit.items, commit.owner)
    }

    @Test func aWALWithCommittedDataIsRecoveredNotDamage() throws {
        let path = scratch.path("library.db")
        let (checkpointed, inWAL, owner) = try crashed(path)
        do {
            let reader = try LibraryDatabase(path: path, readOnly: true)
            #expect(try F.all(reader, owner: "alice") == inWAL.reversed() + checkpointed)
        }
        let db = try LibraryDatabase(path: path)
        #expect(try db.owner(named: "alice") == owner)
        #expect(try F.all(db, owner: "alice") == inWAL.reversed() + checkpointed)
        #expect(try db.changes(owner: "alice", after: owner.version - 1)?.map(\.itemIDs) == [inWAL.map(\.id)])
        #expect(try db.add([F.entry(1, seed: 1)], owner: "alice", nowMs: 3).owner.version == owner.version + 1)
    }

    @Test func aDamagedWALFrameLosesItsTransactionOnly() throws {
        let path = scratch.path("library.db")
        let (checkpointed, _, owner) = try crashed(path)
        // A bit of the first frame's page: its checksum no longer holds, so neither it nor any
        // frame after it counts; the database is as it was before that transaction.
        var wal = try LibraryFile.read(path + "-wal")
        wal[32 + 24 + 200] ^= 0x04
        try LibraryFile.write(wal, to: path + "-wal")
        let db = try LibraryDatabase(path: path)
        #expect(try F.all(db, owner: "alice") == checkpointed)
        #expect(try db.owner(named: "alice").version == owner.version - 1)
        #expect(try db.changes(owner: "alice", after: owner.version - 1) == [])
    }

    @Test func aDamagedPageBesideACommittedWALIsSetAsideWithTheWAL() throws {
        let path = scratch.path("library.db")
        _ = try crashed(path)
        var bytes = try LibraryFile.read(path)
        let pageSize = Self.pageSize(bytes)
        // Pages the WAL holds mask the file's; damage one it does not hold.
        var wal = try LibraryFile.read(path + "-wal")
        var inWAL = Set<Int>()
        var frame = 32
        while frame + 24 + pageSize <= wal.count {
            inWAL.insert(Int(wal[frame]) << 24 | Int(wal[frame + 1]) << 16 | Int(wal[frame + 2]) << 8 | Int(wal[frame + 3]))
            frame += 24 + pageSize
        }
        let pages = bytes.count / pageSize
        let page = try #require((2...pages).reversed().first { !inWAL.contains($0) && [2, 5, 10, 13].contains(bytes[($0 - 1) * pageSize]) })
        bytes[(page - 1) * pageSize] ^= 0x80
        try LibraryFile.write(bytes, to: path)
        wal = try LibraryFile.read(path + "-wal")

        #expect(F.failure { _ = try LibraryDatabase(path: path) } == .dataLoss)
        #expect(try LibraryFile.read(path) == bytes, "the WAL was not checkpointed into the damaged file")
        #expect(try LibraryFile.read(path + "-wal") == wal, "the WAL with the last transaction is kept")
        try setAsideAndStartOver(path, expecting: try files(path))
    }

    @Test func setAsideNeverReplacesAnEarlierSetAsideFile() throws {
        let path = scratch.path("library.db")
        let first = Array("the first damaged file".utf8)
        try LibraryFile.write(first, to: path)
        try LibraryFile.write([7], to: path + "-wal")
        let aside = try LibraryDatabase.setAside(path, stamp: Self.stamp)
        // Damaged again within the same stamp: refused, and neither file is lost.
        let second = Array("the second damaged file".utf8)
        try LibraryFile.write(second, to: path)
        #expect(throws: SystemError.self) { try LibraryDatabase.setAside(path, stamp: Self.stamp) }
        #expect(try LibraryFile.read(aside) == first && LibraryFile.read(aside + "-wal") == [7])
        #expect(try LibraryFile.read(path) == second)
        // Only an aside WAL of that stamp in the way: refused before anything moves.
        try FileManager.default.removeItem(atPath: aside)
        #expect(throws: SystemError.self) { try LibraryDatabase.setAside(path, stamp: Self.stamp) }
        #expect(try LibraryFile.read(path) == second && !LibraryFile.exists(aside))
        // Another stamp is fine.
        #expect(try LibraryFile.read(LibraryDatabase.setAside(path, stamp: "later")) == second)
    }

    @Test func setAsideWithoutWALMovesTheFileAlone() throws {
        let path = scratch.path("library.db")
        try LibraryFile.write(Array("not a database".utf8), to: path)
        try setAsideAndStartOver(path, expecting: ["": Array("not a database".utf8)])
        #expect(try scratch.names().filter { $0.contains("damaged") } == ["library.db.damaged-\(Self.stamp)"])
    }
}
