import EarshotStore
import EarshotTestSupport
import Foundation
import SQLite
import Testing

/// Databases of every earlier schema version, built by hand from the first k migrations, open
/// with their rows intact and go on working; a database from a newer release is refused and
/// left as it is.
@Suite struct LibraryMigrationTests {
    typealias F = LibraryFixture
    let scratch: TemporaryDirectory

    init() throws { scratch = try TemporaryDirectory("earshot-library") }

    /// The versions `seed` has representative rows for. A new migration adds its rows there
    /// (and raises this), so its tables are exercised by the databases built for later versions.
    static let seededVersions: Int64 = 3

    static let aliceIDs = ["0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210", "00000000000000000000000000000001"]
    static let bobID = "abababababababababababababababab"

    /// The rows written into a version-k database, as the library should read them back: alice's
    /// items newest match first (the last two tie, so the later-inserted comes first).
    static let aliceEntries = [
        LibraryEntry(matchedAtMs: 3000, catalog: "radio", catalogVersion: 7, customProperties: #"{"genre":"jazz"}"#, body: [1, 2, 3]),
        LibraryEntry(matchedAtMs: 1000, catalog: "tv", catalogVersion: .max, customProperties: "{}", body: Array(repeating: 9, count: 5000)),
        LibraryEntry(matchedAtMs: 1000, catalog: "tv", catalogVersion: 0, customProperties: #"{"live":true}"#, body: []),
    ]

    /// Builds `path` at schema version `k` by running the first k migrations by hand, with rows
    /// valid for that version.
    static func build(_ path: String, version k: Int) throws {
        let db = try SQLiteConnection(path: path, mode: .create)
        try db.execute("BEGIN")
        for step in 0..<k { try db.execute(LibrarySchema.migrations[step]) }
        if k >= 1 {
            // Owners and items. Alice's version is 7: her earlier changes were never logged (v1)
            // or were trimmed from the log (v2).
            let aliceBytes = aliceEntries.reduce(0) { $0 + $1.body.count }
            try db.run("INSERT INTO owners (name, version, item_count, bytes, changed_ms) VALUES ('alice', 7, 3, ?, 500)", [.integer(Int64(aliceBytes))])
            try db.run("INSERT INTO owners (name, version, item_count, bytes, changed_ms) VALUES ('bob', 1, 1, 4, 600)")
            // Inserted oldest first: the newest-first order reverses the tie of the last two.
            for i in [0, 2, 1] {
                let e = aliceEntries[i]
                try db.run("""
                    INSERT INTO items (id, owner, added_ms, matched_ms, catalog, catalog_version, custom_properties, body)
                    VALUES (?, 'alice', ?, ?, ?, ?, ?, ?)
                    """, [.text(aliceIDs[i]), .integer(Int64(100 + i)), .integer(e.matchedAtMs), .text(e.catalog),
                          .integer(Int64(bitPattern: e.catalogVersion)), .text(e.customProperties), .blob(e.body)])
            }
            try db.run("""
                INSERT INTO items (id, owner, added_ms, matched_ms, catalog, catalog_version, custom_properties, body)
                VALUES (?, 'bob', 600, 50, 'radio', 1, '{}', x'01020304')
                """, [.text(bobID)])
        }
        if k >= 2 {
            // The change log: alice's from version 5 on (earlier ones trimmed), bob's whole.
            try db.run("INSERT INTO changes (owner, version, kind, item_ids, at_ms) VALUES ('alice', 5, 1, ?, 100)", [.text(aliceIDs[0])])
            try db.run("INSERT INTO changes (owner, version, kind, item_ids, at_ms) VALUES ('alice', 6, 1, ?, 102)", [.text(aliceIDs[2])])
            try db.run("INSERT INTO changes (owner, version, kind, item_ids, at_ms) VALUES ('alice', 7, 1, ?, 500)", [.text(aliceIDs[1])])
            try db.run("INSERT INTO changes (owner, version, kind, item_ids, at_ms) VALUES ('bob', 1, 1, ?, 600)", [.text(bobID)])
        }
        try db.setUserVersion(Int64(k))
        try db.execute("COMMIT")
    }

    /// The schema as SQLite keeps it, to compare a migrated database with a new one.
    static func schema(_ path: String) throws -> [String] {
        let db = try SQLiteConnection(path: path, mode: .readOnly)
        let s = try db.prepare("SELECT type || ' ' || name || ' ' || tbl_name || ' ' || coalesce(sql, '') FROM sqlite_schema ORDER BY name")
        var out: [String] = []
        while try s.step() { out.append(s.text(0)) }
        return out
    }

    static func userVersion(_ path: String) throws -> Int64 {
        try SQLiteConnection(path: path, mode: .readOnly).userVersion()
    }

    @Test func everyShippedMigrationHasSeedRows() {
        #expect(LibrarySchema.currentVersion == Self.seededVersions,
                "a new migration: give LibraryMigrationTests.build rows for it and raise seededVersions")
        #expect(LibrarySchema.currentVersion >= 1)
    }

    @Test(arguments: 0..<Int(LibrarySchema.currentVersion))
    func anEarlierVersionOpensMigratedWithItsRows(version k: Int) throws {
        let path = scratch.path("library.db")
        try Self.build(path, version: k)
        #expect(try Self.userVersion(path) == Int64(k))

        // A read-only instance cannot migrate: it refuses the old version and changes nothing.
        let before = try LibraryFile.read(path)
        #expect(F.failure { _ = try LibraryDatabase(path: path, readOnly: true) } == .unavailable)
        #expect(try LibraryFile.read(path) == before)

        let hash: String
        do {
            let db = try LibraryDatabase(path: path)
            #expect(try db.schemaVersion() == LibrarySchema.currentVersion)
            hash = db.ownerHash("alice")
            if k == 0 {
                #expect(try db.owners().isEmpty)
                let added = try db.add([F.entry(1, seed: 1)], owner: "alice", nowMs: 10)
                #expect(added.change.version == 1)
                #expect(try db.changes(owner: "alice", after: 0) == [added.change])
                #expect(try F.all(db, owner: "alice") == added.items)
            } else {
                // The earlier rows read back through the API.
                let alice = try F.all(db, owner: "alice")
                #expect(alice.map(\.id) == Self.aliceIDs)
                #expect(alice.map(\.entry) == Self.aliceEntries)
                #expect(alice.map(\.addedAtMs) == [100, 101, 102])
                let aliceOwner = F.owner("alice", version: 7, items: 3, bytes: 5003, changedAtMs: 500)
                #expect(try db.owner(named: "alice") == aliceOwner)
                #expect(try db.owners() == [aliceOwner, F.owner("bob", version: 1, items: 1, bytes: 4, changedAtMs: 600)])
                #expect(try db.items(owner: "bob", ids: [Self.bobID]).map(\.entry.body) == [[1, 2, 3, 4]])
                #expect(try F.all(db, owner: "alice", LibraryQuery(property: ("live", "true"))).map(\.id) == [Self.aliceIDs[2]])
                #expect(try db.items(owner: "bob", ids: Self.aliceIDs).isEmpty)

                // The change log as the earlier version left it: none at all from version 1, so a
                // watcher anywhere behind must re-read; from version 2 what was kept.
                if k == 1 {
                    #expect(try db.changes(owner: "alice", after: 0) == nil)
                    #expect(try db.changes(owner: "alice", after: 6) == nil)
                    #expect(try db.changes(owner: "bob", after: 0) == nil)
                } else {
                    #expect(try db.changes(owner: "alice", after: 0) == nil, "versions 1 to 4 were trimmed")
                    let kept = try #require(try db.changes(owner: "alice", after: 4))
                    #expect(kept.map { F.Change($0) } == [F.Change(5, .added, [Self.aliceIDs[0]], at: 100),
                                                            F.Change(6, .added, [Self.aliceIDs[2]], at: 102),
                                                            F.Change(7, .added, [Self.aliceIDs[1]], at: 500)])
                    #expect(try db.changes(owner: "bob", after: 0)?.map { F.Change($0) } == [F.Change(1, .added, [Self.bobID], at: 600)])
                }
                #expect(try db.changes(owner: "alice", after: 7) == [])

                // New writes work and are logged from the current version on.
                let added = try db.add([F.entry(5000, size: 10, seed: 1)], owner: "alice", nowMs: 1000)
                #expect(added.owner == F.owner("alice", version: 8, items: 4, bytes: 5013, changedAtMs: 1000))
                let removed = try db.remove([Self.aliceIDs[1]], owner: "alice", nowMs: 1001)
                #expect(removed.owner == F.owner("alice", version: 9, items: 3, bytes: 13, changedAtMs: 1001))
                #expect(try db.changes(owner: "alice", after: 7) == [added.change, removed.change])
                #expect(try db.changes(owner: "alice", after: 8) == [removed.change])
                if k == 1 { #expect(try db.changes(owner: "alice", after: 0) == nil, "still no log before version 8") }
                #expect(try F.all(db, owner: "alice").map(\.id) == [added.items[0].id, Self.aliceIDs[0], Self.aliceIDs[2]])
                let bob = try db.remove([Self.bobID], owner: "bob", nowMs: 1002)
                #expect(bob.owner == F.owner("bob", version: 2, items: 0, bytes: 0, changedAtMs: 1002))
                #expect(try db.changes(owner: "bob", after: 1) == [bob.change])
                #expect(F.failure { _ = try db.remove([Self.aliceIDs[0]], owner: "bob", nowMs: 1003) } == .notFound)
            }
        }
        // Migrated once for good: the same schema as a new database, the version stored, the salt kept.
        #expect(try Self.userVersion(path) == LibrarySchema.currentVersion)
        do { _ = try LibraryDatabase(path: scratch.path("new.db")) }
        #expect(try Self.schema(path) == Self.schema(scratch.path("new.db")))
        let reopened = try LibraryDatabase(path: path, readOnly: true)
        #expect(reopened.ownerHash("alice") == hash)
        #expect(try reopened.owner(named: "alice").version == (k == 0 ? 1 : 9))
    }

    @Test func aFailedMigrationStepIsRolledBack() throws {
        let path = scratch.path("library.db")
        try Self.build(path, version: 1)
        // A table in the way of migration 2: the step fails as a whole and the version stays 1.
        try SQLiteConnection(path: path).execute("CREATE TABLE changes (x)")
        #expect(throws: LibraryError.self) { try LibraryDatabase(path: path) }
        #expect(try Self.userVersion(path) == 1)
        let raw = try SQLiteConnection(path: path, mode: .readOnly)
        #expect(try raw.scalar("SELECT count(*) FROM items") == .integer(4))
        #expect(try raw.scalar("SELECT group_concat(name, ',') FROM pragma_table_info('changes')") == .text("x"))
    }

    @Test func aNewerVersionIsRefusedAndLeftByteIdentical() throws {
        // Written by this release (WAL), then marked as from a newer one.
        let path = scratch.path("library.db")
        do {
            let db = try LibraryDatabase(path: path)
            _ = try db.add([F.entry(1, seed: 1)], owner: "alice", nowMs: 1)
        }
        do {
            let raw = try SQLiteConnection(path: path)
            try raw.setUserVersion(LibrarySchema.currentVersion + 1)
        }
        #expect(try scratch.names() == ["library.db"])
        let bytes = try LibraryFile.read(path)
        for readOnly in [false, true] {
            #expect(F.failure { _ = try LibraryDatabase(path: path, readOnly: readOnly) } == .unavailable)
            #expect(try LibraryFile.read(path) == bytes, "readOnly \(readOnly)")
            // SQLite may leave an empty WAL and its index (a reader cannot delete them): nothing
            // in them, and nothing written to the file.
            #expect(try scratch.names().allSatisfy { ["library.db", "library.db-wal", "library.db-shm"].contains($0) })
            #expect(try !LibraryFile.exists(path + "-wal") || LibraryFile.read(path + "-wal").isEmpty, "readOnly \(readOnly)")
        }

        // A rollback-journal database from a newer release: not even switched to WAL.
        let other = scratch.path("other.db")
        do {
            let raw = try SQLiteConnection(path: other)
            try raw.execute("CREATE TABLE future (x); INSERT INTO future VALUES (1)")
            try raw.setUserVersion(LibrarySchema.currentVersion + 5)
        }
        let otherBytes = try LibraryFile.read(other)
        #expect(otherBytes[18] == 1 && otherBytes[19] == 1)
        #expect(F.failure { _ = try LibraryDatabase(path: other) } == .unavailable)
        #expect(try LibraryFile.read(other) == otherBytes)
        #expect(try Self.userVersion(other) == LibrarySchema.currentVersion + 5)
    }
}
