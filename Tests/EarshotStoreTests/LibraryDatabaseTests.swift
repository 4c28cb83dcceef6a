import EarshotStore
import EarshotSystem
import EarshotTestSupport
import Foundation
import SQLite
import Testing

/// A folder of its own for one test's database files, removed with everything in it when the
/// test's suite instance goes (Swift Testing makes one per test, and per argument).
/// Whole-file reads and writes for the library tests (in a `TemporaryDirectory`).
enum LibraryFile {
    static func read(_ path: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))) }
    static func write(_ bytes: [UInt8], to path: String) throws { try Data(bytes).write(to: URL(fileURLWithPath: path)) }
    static func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }
    static func copy(_ from: String, to: String) throws { try write(read(from), to: to) }
}

/// Entries, bodies and whole-library reads shared by the library tests.
enum LibraryFixture {
    /// A body of `size` bytes that differs with `seed`.
    static func body(_ size: Int, seed: Int) -> [UInt8] {
        var random = SeededRandom(seed: UInt64(bitPattern: Int64(seed)) &+ 1)
        return (0..<size).map { _ in UInt8(truncatingIfNeeded: random.next()) }
    }

    static func entry(_ matchedAtMs: Int64, catalog: String = "main", catalogVersion: UInt64 = 3, properties: String = "{}",
                      size: Int = 24, seed: Int = 0) -> LibraryEntry {
        LibraryEntry(matchedAtMs: matchedAtMs, catalog: catalog, catalogVersion: catalogVersion, customProperties: properties,
                     body: body(size, seed: seed))
    }

    /// A change's fields, to compare with what is expected (LibraryChange has no public initializer).
    struct Change: Equatable, CustomStringConvertible {
        var version: UInt64
        var kind: LibraryChange.Kind
        var itemIDs: [String]
        var atMs: Int64

        init(_ version: UInt64, _ kind: LibraryChange.Kind, _ itemIDs: [String], at atMs: Int64) {
            self.version = version
            self.kind = kind
            self.itemIDs = itemIDs
            self.atMs = atMs
        }

        init(_ change: LibraryChange) { self.init(change.version, change.kind, change.itemIDs, at: change.atMs) }

        var description: String { "v\(version) \(kind) \(itemIDs) at \(atMs)" }
    }

    static func owner(_ name: String, version: UInt64, items: Int, bytes: Int, changedAtMs: Int64) -> LibraryOwner {
        var owner = LibraryOwner.empty(name)
        owner.version = version
        owner.itemCount = items
        owner.bytes = bytes
        owner.changedAtMs = changedAtMs
        return owner
    }

    static func isItemID(_ id: String) -> Bool {
        id.utf8.count == 32 && id.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    /// Every item `owner` has that `query` selects, walking its pages through their tokens.
    static func all(_ db: LibraryDatabase, owner: String, _ query: LibraryQuery = LibraryQuery(limit: 1000)) throws -> [LibraryItem] {
        var query = query
        var out: [LibraryItem] = []
        while true {
            let page = try db.items(owner: owner, query)
            out += page.items
            guard let next = page.next else { return out }
            guard let cursor = LibraryCursor(token: next.token) else {
                Issue.record("page token \(next.token) is refused")
                return out
            }
            query.after = cursor
        }
    }

    /// The kind of library error `body` throws; nil (and an issue) when it throws nothing or something else.
    static func failure(_ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) -> LibraryError.Kind? {
        do {
            try body()
            Issue.record("expected a library error, got none", sourceLocation: sourceLocation)
            return nil
        } catch let error as LibraryError {
            return error.kind
        } catch {
            Issue.record("expected a library error, got \(error)", sourceLocation: sourceLocation)
            return nil
        }
    }
}

/// The library database through its API: adding and removing all or nothing, owner limits,
/// paging and filters, owners kept apart, the change log, durability, backups, the size limit
/// and read-only instances.
@Suite struct LibraryDatabaseTests {
    typealias F = LibraryFixture
    let scratch: TemporaryDirectory

    init() throws { scratch = try TemporaryDirectory("earshot-library") }

    func open(_ name: String = "library.db", limits: LibraryLimits = LibraryLimits(), maximumDatabaseBytes: Int? = nil,
              readOnly: Bool = false) throws -> LibraryDatabase {
        try LibraryDatabase(path: scratch.path(name), limits: limits, maximumDatabaseBytes: maximumDatabaseBytes, readOnly: readOnly)
    }

    // MARK: Add

    @Test func addingOneItemStoresItWithANewIDAndRaisesTheVersion() throws {
        let db = try open()
        #expect(try db.owner(named: "alice") == .empty("alice"))
        let entry = F.entry(1_700_000_000_123, catalog: "radio", catalogVersion: .max, properties: #"{"genre":"jazz"}"#, size: 300, seed: 1)
        let commit = try db.add([entry], owner: "alice", nowMs: 42)
        #expect(commit.items.count == 1)
        let item = try #require(commit.items.first)
        #expect(F.isItemID(item.id), "id \(item.id)")
        #expect(item.addedAtMs == 42 && item.entry == entry)
        #expect(F.Change(commit.change) == F.Change(1, .added, [item.id], at: 42))
        let owner = F.owner("alice", version: 1, items: 1, bytes: 300, changedAtMs: 42)
        #expect(commit.owner == owner)
        #expect(try db.owner(named: "alice") == owner)
        #expect(try db.owners() == [owner])
        // Read back: the same item, the largest catalog version included.
        #expect(try db.items(owner: "alice", ids: [item.id]) == [item])
        let page = try db.items(owner: "alice", LibraryQuery())
        #expect(page.items == [item] && page.next == nil && page.owner == owner)
    }

    @Test func addingManyItemsGivesUniqueIDsAndOneVersionPerCall() throws {
        let db = try open()
        var ids: [String] = []
        var bytes = 0
        for (call, count) in [1, 7, 250, 3].enumerated() {
            let entries = (0..<count).map { (i: Int) -> LibraryEntry in F.entry(Int64(call * 1000 + i), size: 10 + i % 50, seed: call * 1000 + i) }
            let commit = try db.add(entries, owner: "alice", nowMs: Int64(100 + call))
            bytes += entries.reduce(0) { $0 + $1.body.count }
            ids += commit.items.map(\.id)
            #expect(commit.change.version == UInt64(call + 1))
            #expect(commit.change.kind == .added && commit.change.itemIDs == commit.items.map(\.id))
            #expect(commit.items.map(\.entry) == entries, "the items come back in the order given")
            #expect(commit.owner == F.owner("alice", version: UInt64(call + 1), items: ids.count, bytes: bytes, changedAtMs: Int64(100 + call)))
        }
        #expect(ids.count == 261 && Set(ids).count == 261, "ids are unique")
        #expect(ids.allSatisfy(F.isItemID))
        #expect(Set(try F.all(db, owner: "alice").map(\.id)) == Set(ids))
    }

    /// Group commit: writes in one transaction each stay all or nothing (a failing one is undone,
    /// the others commit, versions go on as if they had committed one by one), and a transaction
    /// that fails keeps none of them.
    @Test func writesInOneTransactionStayAllOrNothingEach() throws {
        var limits = LibraryLimits()
        limits.maximumItems = 3
        let db = try open(limits: limits)
        var commits: [LibraryCommit] = []
        var refused: LibraryError.Kind?
        try db.transaction { () throws(LibraryError) in
            commits.append(try db.add([F.entry(1, seed: 1), F.entry(2, seed: 2)], owner: "alice", nowMs: 10))
            do throws(LibraryError) { _ = try db.add([F.entry(3, seed: 3), F.entry(4, seed: 4)], owner: "alice", nowMs: 11) } catch {
                refused = error.kind  // 4 items would pass the limit of 3
            }
            commits.append(try db.add([F.entry(5, seed: 5)], owner: "alice", nowMs: 12))
            commits.append(try db.add([F.entry(6, seed: 6)], owner: "bob", nowMs: 12))
        }
        #expect(refused == .resourceExhausted)
        #expect(commits.map(\.change.version) == [1, 2, 1])
        #expect(try Set(F.all(db, owner: "alice").map(\.id)) == Set((commits[0].items + commits[1].items).map(\.id)))
        #expect(try db.owner(named: "alice").itemCount == 3)
        #expect(try db.changes(owner: "alice", after: 0)?.map(\.version) == [1, 2])

        // A transaction that throws keeps nothing of the writes that succeeded inside it.
        #expect(F.failure {
            try db.transaction { () throws(LibraryError) in
                _ = try db.remove([commits[1].items[0].id], owner: "alice", nowMs: 20)
                _ = try db.add([F.entry(7, seed: 7)], owner: "carol", nowMs: 20)
                throw LibraryError(.internal, "abandoned")
            }
        } == .internal)
        #expect(try db.owner(named: "alice").itemCount == 3)
        #expect(try db.owner(named: "alice").version == 2)
        #expect(try db.owners().map(\.name) == ["alice", "bob"])
    }

    @Test func addIsAllOrNothing() throws {
        var limits = LibraryLimits()
        limits.maximumItemBytes = 100
        limits.maximumBatch = 5
        let db = try open(limits: limits)
        let first = try db.add([F.entry(1, size: 100, seed: 1)], owner: "alice", nowMs: 1)  // exactly the largest body
        let before = try F.all(db, owner: "alice")
        #expect(before == first.items)

        // One body one byte too big, in the middle of the batch: none of the batch is stored.
        let tooBig = [F.entry(2, size: 10, seed: 2), F.entry(3, size: 101, seed: 3), F.entry(4, size: 10, seed: 4)]
        #expect(F.failure { _ = try db.add(tooBig, owner: "alice", nowMs: 2) } == .invalidArgument)
        // One item over the batch size.
        let batch = (0..<6).map { F.entry(Int64(10 + $0), size: 10, seed: 10 + $0) }
        #expect(F.failure { _ = try db.add(batch, owner: "alice", nowMs: 3) } == .invalidArgument)
        #expect(F.failure { _ = try db.add([], owner: "alice", nowMs: 3) } == .invalidArgument)
        // The same for an owner that has nothing yet: it does not appear.
        #expect(F.failure { _ = try db.add(tooBig, owner: "bob", nowMs: 4) } == .invalidArgument)

        #expect(try F.all(db, owner: "alice") == before)
        #expect(try db.owner(named: "alice") == first.owner, "version, count and bytes unchanged")
        #expect(try db.owners().map(\.name) == ["alice"])
        #expect(try db.changes(owner: "alice", after: 0) == [first.change])
        // A batch of exactly maximumBatch is accepted.
        #expect(try db.add(Array(batch.prefix(5)), owner: "alice", nowMs: 5).owner.itemCount == 6)
    }

    @Test func ownerLimitsRefuseTheWholeAddWithResourceExhausted() throws {
        var limits = LibraryLimits()
        limits.maximumItems = 5
        limits.maximumBytes = 1000
        let db = try open(limits: limits)

        // Items: 3, then 3 more would be 6 > 5.
        let three = try db.add((0..<3).map { F.entry(Int64($0), size: 10, seed: $0) }, owner: "alice", nowMs: 1)
        #expect(F.failure { _ = try db.add((3..<6).map { F.entry(Int64($0), size: 10, seed: $0) }, owner: "alice", nowMs: 2) }
                == .resourceExhausted)
        #expect(try db.owner(named: "alice") == three.owner)
        #expect(try F.all(db, owner: "alice").count == 3)
        // Exactly up to the limit is fine; one more is not.
        let five = try db.add((3..<5).map { F.entry(Int64($0), size: 10, seed: $0) }, owner: "alice", nowMs: 3)
        #expect(five.owner.itemCount == 5 && five.owner.version == 2)
        #expect(F.failure { _ = try db.add([F.entry(9, size: 1, seed: 9)], owner: "alice", nowMs: 4) } == .resourceExhausted)
        // A new owner whose first add is over the limit is not created.
        #expect(F.failure { _ = try db.add((0..<6).map { F.entry(Int64($0), size: 1, seed: $0) }, owner: "carol", nowMs: 5) }
                == .resourceExhausted)
        #expect(try db.owners().map(\.name) == ["alice"])

        // Bytes: 600, then 500 would be 1100 > 1000; 400 reaches 1000 exactly.
        let big = try db.add([F.entry(1, size: 600, seed: 20)], owner: "bob", nowMs: 6)
        #expect(F.failure { _ = try db.add([F.entry(2, size: 250, seed: 21), F.entry(3, size: 250, seed: 22)], owner: "bob", nowMs: 7) }
                == .resourceExhausted)
        #expect(try db.owner(named: "bob") == big.owner)
        #expect(try F.all(db, owner: "bob") == big.items)
        #expect(try db.add([F.entry(4, size: 400, seed: 23)], owner: "bob", nowMs: 8).owner.bytes == 1000)
        #expect(F.failure { _ = try db.add([F.entry(5, size: 1, seed: 24)], owner: "bob", nowMs: 9) } == .resourceExhausted)
        // Removing makes room again.
        _ = try db.remove([big.items[0].id], owner: "bob", nowMs: 10)
        #expect(try db.add([F.entry(6, size: 600, seed: 25)], owner: "bob", nowMs: 11).owner.bytes == 1000)
    }

    // MARK: Items

    @Test func itemsComeNewestMatchFirstWithTiesInInsertionOrder() throws {
        let db = try open()
        // Matched times with ties, within one batch and across batches.
        let first = try db.add([5, 10, 10, 1].map { F.entry($0, seed: Int($0)) }, owner: "alice", nowMs: 1).items
        let second = try db.add([10, 1, 7].map { F.entry($0, seed: Int($0) + 100) }, owner: "alice", nowMs: 2).items
        let inserted = first + second
        let page = try db.items(owner: "alice", LibraryQuery())
        // Ties: the one added later comes first (newest first, as for the match times).
        let expected = [inserted[4], inserted[2], inserted[1], inserted[6], inserted[0], inserted[5], inserted[3]]
        #expect(page.items.map(\.entry.matchedAtMs) == [10, 10, 10, 7, 5, 1, 1])
        #expect(page.items.map(\.id) == expected.map(\.id))
        #expect(page.next == nil)
        // Paged one at a time: the same order.
        #expect(try F.all(db, owner: "alice", LibraryQuery(limit: 1)).map(\.id) == expected.map(\.id))
    }

    @Test func pageTokensWalkAllItemsOfAnOwnerWithoutDuplicatesOrMisses() throws {
        let db = try open()
        // 2500 items for alice in three adds, with many ties of their matched times; bob's items
        // share those times and must never appear in alice's pages.
        var inserted: [LibraryItem] = []
        for range in [0..<1000, 1000..<2000, 2000..<2500] {
            let entries = range.map { i in F.entry(Int64((i * 7919) % 400) * 1000, size: 8, seed: i) }
            inserted += try db.add(entries, owner: "alice", nowMs: Int64(range.lowerBound)).items
            _ = try db.add((0..<10).map { F.entry(Int64($0 * 1000), size: 8, seed: -$0) }, owner: "bob", nowMs: 0)
        }
        // The expected order: matched time descending, then the later insertion first.
        let expected = inserted.enumerated()
            .sorted { a, b in
                a.element.entry.matchedAtMs != b.element.entry.matchedAtMs
                    ? a.element.entry.matchedAtMs > b.element.entry.matchedAtMs : a.offset > b.offset
            }
            .map(\.element.id)
        #expect(expected.count == 2500 && Set(expected).count == 2500)

        for limit in [1000, 333, 250, 100, 7] {
            var query = LibraryQuery(limit: limit)
            var walked: [String] = []
            var pages = 0
            while true {
                let page = try db.items(owner: "alice", query)
                pages += 1
                walked += page.items.map(\.id)
                #expect(page.owner.itemCount == 2500)
                guard let next = page.next else {
                    #expect(page.items.count <= limit && !page.items.isEmpty)
                    break
                }
                #expect(page.items.count == limit, "only the last page is short")
                let token = next.token
                let cursor = try #require(LibraryCursor(token: token), "token \(token)")
                #expect(cursor == next && cursor.token == token)
                query.after = cursor
            }
            #expect(pages == (2500 + limit - 1) / limit, "limit \(limit): no empty last page")
            #expect(walked == expected, "limit \(limit): every item once, in order")
        }
        #expect(try F.all(db, owner: "bob").count == 30)
    }

    @Test func cursorTokensThatAreNotOursAreRefused() {
        for token in ["", ".", "1", "1.", ".1", "1.2.3", "a.b", "1.b", "1.5e3", " 1.2"] {
            #expect(LibraryCursor(token: token) == nil, "token \(token)")
        }
        #expect(LibraryCursor(token: "-5.7")?.token == "-5.7")
    }

    @Test func itemsRefusesPageSizesOutsideOneToAThousand() throws {
        let db = try open()
        for limit in [0, -1, 1001] {
            #expect(F.failure { _ = try db.items(owner: "alice", LibraryQuery(limit: limit)) } == .invalidArgument, "limit \(limit)")
        }
        #expect(try db.items(owner: "alice", LibraryQuery(limit: 1000)).items.isEmpty)
    }

    @Test func filtersSelectByCatalogMatchTimeAndCustomProperty() throws {
        let db = try open()
        let entries = [
            F.entry(1000, catalog: "a", properties: #"{"genre":"jazz","year":1999,"live":true}"#, seed: 0),
            F.entry(2000, catalog: "b", properties: #"{"genre":"rock","year":"1999","live":false}"#, seed: 1),
            F.entry(3000, catalog: "a", properties: #"{"genre":"jazz","year":2001,"live":1}"#, seed: 2),
            F.entry(4000, catalog: "b", properties: "{}", seed: 3),
            F.entry(5000, catalog: "a", properties: #"{"odd key.with [dot]":"x","genre":null,"live":0}"#, seed: 4),
            F.entry(3000, catalog: "a", properties: #"{"genre":"Jazz","tags":["a","b"],"nested":{"k":1}}"#, seed: 5),
        ]
        let ids = try db.add(entries, owner: "alice", nowMs: 1).items.map(\.id)
        _ = try db.add(entries, owner: "bob", nowMs: 1)  // the same entries for someone else
        func select(_ query: LibraryQuery) throws -> [Int] {
            let found = try F.all(db, owner: "alice", query).map(\.id)
            // Paged one by one through tokens: the same selection.
            var one = query
            one.limit = 1
            #expect(try F.all(db, owner: "alice", one).map(\.id) == found, "paged filter")
            return found.map { id in ids.firstIndex(of: id) ?? -1 }
        }
        func property(_ key: String, _ value: String) -> LibraryQuery { LibraryQuery(property: (key, value)) }

        #expect(try select(LibraryQuery()) == [4, 3, 5, 2, 1, 0])
        #expect(try select(LibraryQuery(catalog: "a")) == [4, 5, 2, 0])
        #expect(try select(LibraryQuery(catalog: "b")) == [3, 1])
        #expect(try select(LibraryQuery(catalog: "A")) == [])
        // From is inclusive, before exclusive.
        #expect(try select(LibraryQuery(matchedFromMs: 3000)) == [4, 3, 5, 2])
        #expect(try select(LibraryQuery(matchedBeforeMs: 3000)) == [1, 0])
        #expect(try select(LibraryQuery(matchedFromMs: 2000, matchedBeforeMs: 4000)) == [5, 2, 1])
        #expect(try select(LibraryQuery(matchedFromMs: 3000, matchedBeforeMs: 3000)) == [])
        #expect(try select(LibraryQuery(catalog: "a", matchedFromMs: 2000, matchedBeforeMs: 5000)) == [5, 2])
        // Strings: exact, case-sensitive.
        #expect(try select(property("genre", #""jazz""#)) == [2, 0])
        #expect(try select(property("genre", #""Jazz""#)) == [5])
        #expect(try select(property("genre", #""blues""#)) == [])
        // Numbers and strings differ: 1999 is not "1999".
        #expect(try select(property("year", "1999")) == [0])
        #expect(try select(property("year", #""1999""#)) == [1])
        #expect(try select(property("year", " 2001 ")) == [2], "JSON around spaces is still JSON")
        // Booleans are not numbers: true is not 1, false is not 0.
        #expect(try select(property("live", "true")) == [0])
        #expect(try select(property("live", "false")) == [1])
        #expect(try select(property("live", "1")) == [2])
        #expect(try select(property("live", "0")) == [4])
        // null matches an explicit null, not a missing key.
        #expect(try select(property("genre", "null")) == [4])
        // Keys with dots and brackets are one key; arrays and objects compare as JSON.
        #expect(try select(property("odd key.with [dot]", #""x""#)) == [4])
        #expect(try select(property("tags", #"[ "a", "b" ]"#)) == [5])
        #expect(try select(property("tags", #"["b","a"]"#)) == [])
        #expect(try select(property("nested", #"{ "k": 1 }"#)) == [5])
        // Filters combine.
        #expect(try select(LibraryQuery(catalog: "a", matchedFromMs: 2000, property: ("genre", #""jazz""#))) == [2])

        // Any key is one key, quotes and backslashes included (keys are not JSON paths).
        for key in [#"a"b"#, #"a\b"#, "$.genre"] { #expect(try select(property(key, "1")) == [], "key \(key)") }
        // An empty key or a value that is not JSON is refused.
        #expect(F.failure { _ = try db.items(owner: "alice", property("", "1")) } == .invalidArgument)
        for value in ["jazz", "", "{", "'jazz'", "tru"] {
            #expect(F.failure { _ = try db.items(owner: "alice", property("genre", value)) } == .invalidArgument, "value \(value)")
        }
    }

    /// The property index follows the items: removed or deleted items leave it too.
    @Test func thePropertyIndexFollowsAddsRemovesAndDeletes() throws {
        let db = try open()
        let jazz = LibraryQuery(property: ("genre", #""jazz""#))
        let a = try db.add([F.entry(1, properties: #"{"genre":"jazz","n":1}"#, seed: 1),
                            F.entry(2, properties: #"{"genre":"jazz"}"#, seed: 2)], owner: "alice", nowMs: 1)
        _ = try db.add([F.entry(3, properties: #"{"genre":"jazz"}"#, seed: 3)], owner: "bob", nowMs: 1)
        #expect(try F.all(db, owner: "alice", jazz).map(\.id) == a.items.map(\.id).reversed())
        _ = try db.remove([a.items[1].id], owner: "alice", nowMs: 2)
        #expect(try F.all(db, owner: "alice", jazz).map(\.id) == [a.items[0].id])
        _ = try db.deleteOwner("alice", nowMs: 3)
        #expect(try F.all(db, owner: "alice", jazz).isEmpty)
        #expect(try F.all(db, owner: "bob", jazz).count == 1)
        let raw = try SQLiteConnection(path: scratch.path("library.db"), mode: .readOnly)
        #expect(try raw.scalar("SELECT count(*) FROM item_properties") == .integer(1), "only bob's one property is left")
    }

    /// A writer that checkpoints between writes (as the daemon's does) keeps the WAL short, also
    /// while a second connection reads.
    @Test func checkpointsBetweenWritesKeepTheWALShort() throws {
        let writer = try LibraryDatabase(path: scratch.path("library.db"), callerCheckpoints: true)
        let reader = try LibraryDatabase(path: scratch.path("library.db"), readOnly: true, verify: false)
        var largest = 0
        for i in 0..<1500 {
            _ = try writer.add([F.entry(Int64(i), size: 2000, seed: i)], owner: "alice", nowMs: Int64(i))
            if i % 10 == 0 { _ = try reader.items(owner: "alice", LibraryQuery(limit: 50)) }
            if i % 100 == 99 { try writer.checkpoint() }
            largest = max(largest, Int(FileIdentity(path: scratch.path("library.db") + "-wal")?.size ?? 0))
        }
        let database = Int(FileIdentity(path: scratch.path("library.db"))?.size ?? 0)
        print("WAL at most \(largest) bytes; database \(database) bytes")
        #expect(database > 1500 * 2000, "the items were checkpointed into the database file")
        // 1500 writes without checkpoints would leave a WAL of some 60 MB; 100 writes between them
        // stay a few megabytes.
        #expect(largest < 8 << 20, "the WAL grew to \(largest) bytes")
    }

    /// A backup copy opened as the library (restored) makes every watcher resync: versions jump
    /// by the restore gap and the log is empty, so a version a client saw after the copy was
    /// taken can never be mistaken for the same state.
    @Test func aRestoredBackupMakesEveryWatcherResync() throws {
        let db = try open()
        for i in 0..<3 { _ = try db.add([F.entry(Int64(i), seed: i)], owner: "alice", nowMs: Int64(i)) }
        try db.backup(to: scratch.path("copy.db"))
        for i in 3..<6 { _ = try db.add([F.entry(Int64(i), seed: i)], owner: "alice", nowMs: Int64(i)) }  // seen by a client: v6

        let restored = try open("copy.db")
        let owner = try restored.owner(named: "alice")
        #expect(owner.version == 3 + LibraryDatabase.restoreVersionGap && owner.itemCount == 3)
        #expect(try restored.changes(owner: "alice", after: 6) == nil, "the client at version 6 must re-read")
        #expect(try restored.changes(owner: "alice", after: 3) == nil)
        let next = try restored.add([F.entry(9, seed: 9)], owner: "alice", nowMs: 9)
        #expect(next.change.version == owner.version + 1)
        #expect(try restored.changes(owner: "alice", after: owner.version) == [next.change])
        // Only once: opened again it is an ordinary library.
        let again = try open("copy.db")
        #expect(try again.owner(named: "alice").version == owner.version + 1)
    }

    /// Pages of large items stop at about a megabyte, with a cursor, and still walk everything.
    @Test func pagesOfLargeItemsStopEarlyAndWalkEverything() throws {
        var limits = LibraryLimits()
        limits.maximumItemBytes = 64 << 10
        let db = try open(limits: limits)
        var ids: [String] = []
        for batch in 0..<4 {
            let entries = (0..<10).map { F.entry(Int64(batch * 10 + $0), size: 60 << 10, seed: batch * 10 + $0) }
            ids += try db.add(entries, owner: "alice", nowMs: 1).items.map(\.id)
        }
        let first = try db.items(owner: "alice", LibraryQuery(limit: 1000))
        let bytes = first.items.reduce(0) { $0 + $1.entry.body.count }
        #expect(first.items.count > 1 && bytes <= LibraryDatabase.maximumPageBytes && first.next != nil, "\(first.items.count) items, \(bytes) bytes")
        #expect(try F.all(db, owner: "alice").map(\.id) == ids.reversed())
    }

    /// Custom properties SQLite's JSON parser refuses are the caller's mistake, not the box's.
    @Test func propertiesThatAreNotJSONAreRefusedAsInvalid() throws {
        let db = try open()
        #expect(F.failure { _ = try db.add([F.entry(1, properties: "{not json")], owner: "alice", nowMs: 1) } == .invalidArgument)
        #expect(try db.owners().isEmpty)
    }

    // MARK: Remove

    @Test func removeIsAllOrNothing() throws {
        var limits = LibraryLimits()
        limits.maximumBatch = 4
        let db = try open(limits: limits)
        let added = try db.add((0..<4).map { F.entry(Int64($0), size: 100 + $0, seed: $0) }, owner: "alice", nowMs: 1)
        let a = added.items.map(\.id)
        let bobs = try db.add([F.entry(9, seed: 9)], owner: "bob", nowMs: 1).items[0].id
        let unknown = String(repeating: "0", count: 32)

        // One unknown id, one of bob's, or one malformed id: nothing is removed.
        for ids in [[a[0], a[1], unknown], [bobs, a[0]], [a[2], "not an id"]] {
            #expect(F.failure { _ = try db.remove(ids, owner: "alice", nowMs: 2) } == .notFound, "\(ids)")
        }
        #expect(F.failure { _ = try db.remove([], owner: "alice", nowMs: 2) } == .invalidArgument)
        #expect(F.failure { _ = try db.remove(a + [unknown], owner: "alice", nowMs: 2) } == .invalidArgument, "5 ids, batch 4")
        #expect(try db.owner(named: "alice") == added.owner)
        #expect(try F.all(db, owner: "alice").count == 4)
        #expect(try db.items(owner: "bob", ids: [bobs]).count == 1)

        // Duplicates count once: the change lists each id once, in the order given.
        let removed = try db.remove([a[2], a[0], a[2], a[0]], owner: "alice", nowMs: 3)
        #expect(F.Change(removed.change) == F.Change(2, .removed, [a[2], a[0]], at: 3))
        #expect(removed.items.isEmpty)
        #expect(removed.owner == F.owner("alice", version: 2, items: 2, bytes: 101 + 103, changedAtMs: 3))
        #expect(try db.owner(named: "alice") == removed.owner)
        #expect(Set(try F.all(db, owner: "alice").map(\.id)) == [a[1], a[3]])
        #expect(try db.items(owner: "alice", ids: [a[0], a[1], a[2], a[3]]).map(\.id) == [a[1], a[3]])
        // A removed id is gone: removing it again is not found.
        #expect(F.failure { _ = try db.remove([a[0]], owner: "alice", nowMs: 4) } == .notFound)
        // Duplicates past the batch size are fine when the unique ids are few enough.
        #expect(try db.remove(Array(repeating: a[1], count: 10), owner: "alice", nowMs: 5).owner.itemCount == 1)
        // An owner with no library has nothing to remove.
        #expect(F.failure { _ = try db.remove([a[3]], owner: "nobody", nowMs: 6) } == .notFound)
        #expect(try db.owners().map(\.name) == ["alice", "bob"])
    }

    @Test func ownersAreKeptApart() throws {
        let db = try open()
        let alice = try db.add((0..<3).map { F.entry(Int64($0), catalog: "c", seed: $0) }, owner: "alice", nowMs: 1)
        let bob = try db.add([F.entry(1, catalog: "c", seed: 10)], owner: "bob", nowMs: 2)
        let aliceIDs = alice.items.map(\.id)

        // Bob sees only his own items, whatever the query.
        #expect(try F.all(db, owner: "bob").map(\.id) == bob.items.map(\.id))
        #expect(try F.all(db, owner: "bob", LibraryQuery(catalog: "c", limit: 1)).map(\.id) == bob.items.map(\.id))
        #expect(try db.items(owner: "bob", ids: aliceIDs).isEmpty)
        #expect(try db.items(owner: "nobody", ids: aliceIDs).isEmpty)
        #expect(try db.items(owner: "nobody", LibraryQuery()).items.isEmpty)
        // Bob cannot remove Alice's item, alone or with his own.
        #expect(F.failure { _ = try db.remove([aliceIDs[0]], owner: "bob", nowMs: 3) } == .notFound)
        #expect(F.failure { _ = try db.remove([bob.items[0].id, aliceIDs[1]], owner: "bob", nowMs: 3) } == .notFound)
        #expect(try db.items(owner: "alice", ids: aliceIDs).map(\.id) == aliceIDs)
        #expect(try db.owners() == [alice.owner, bob.owner])
        // Versions and change logs are per owner.
        #expect(try db.changes(owner: "bob", after: 0) == [bob.change])
        #expect(try db.changes(owner: "alice", after: 0) == [alice.change])
        _ = try db.remove([aliceIDs[0]], owner: "alice", nowMs: 4)
        #expect(try db.owner(named: "bob") == bob.owner)
        #expect(try db.items(owner: "bob", ids: bob.items.map(\.id)) == bob.items)
    }

    @Test func deletingAnOwnerClearsItsItemsAndGoesOnWithItsVersion() throws {
        let db = try open()
        let first = try db.add((0..<5).map { F.entry(Int64($0), size: 50, seed: $0) }, owner: "alice", nowMs: 1)
        _ = try db.remove([first.items[0].id], owner: "alice", nowMs: 2)
        let bob = try db.add([F.entry(1, seed: 10)], owner: "bob", nowMs: 3)

        let cleared = try db.deleteOwner("alice", nowMs: 4)
        #expect(F.Change(cleared.change) == F.Change(3, .cleared, [], at: 4))
        #expect(cleared.owner == F.owner("alice", version: 3, items: 0, bytes: 0, changedAtMs: 4))
        #expect(try db.owner(named: "alice") == cleared.owner)
        #expect(try F.all(db, owner: "alice").isEmpty)
        #expect(try db.items(owner: "alice", ids: first.items.map(\.id)).isEmpty)
        #expect(try db.changes(owner: "alice", after: 2) == [cleared.change])
        // Bob is untouched.
        #expect(try db.items(owner: "bob", ids: bob.items.map(\.id)) == bob.items)
        #expect(try db.owner(named: "bob") == bob.owner)
        // A cleared item cannot be removed; the version keeps counting after new adds.
        #expect(F.failure { _ = try db.remove([first.items[1].id], owner: "alice", nowMs: 5) } == .notFound)
        let again = try db.add([F.entry(9, size: 7, seed: 9)], owner: "alice", nowMs: 6)
        #expect(again.owner == F.owner("alice", version: 4, items: 1, bytes: 7, changedAtMs: 6))
        #expect(try db.changes(owner: "alice", after: 2) == [cleared.change, again.change])
        // An unknown owner is not found, and nothing changes.
        #expect(F.failure { _ = try db.deleteOwner("nobody", nowMs: 7) } == .notFound)
        #expect(try db.owners().map(\.name) == ["alice", "bob"])
    }

    // MARK: Changes

    @Test func changesReturnTheExactLog() throws {
        let db = try open()
        let add1 = try db.add([F.entry(1, seed: 1), F.entry(2, seed: 2)], owner: "alice", nowMs: 10)
        let add2 = try db.add([F.entry(3, seed: 3)], owner: "alice", nowMs: 20)
        let removal = try db.remove([add1.items[1].id, add2.items[0].id], owner: "alice", nowMs: 30)
        let cleared = try db.deleteOwner("alice", nowMs: 40)
        let log = [add1.change, add2.change, removal.change, cleared.change]
        #expect(log.map(\.version) == [1, 2, 3, 4])
        #expect(log.map(\.kind) == [.added, .added, .removed, .cleared])

        #expect(try db.changes(owner: "alice", after: 0) == log)
        for v in 0...4 {
            #expect(try db.changes(owner: "alice", after: UInt64(v)) == Array(log.dropFirst(v)), "after \(v)")
        }
        #expect(try db.changes(owner: "alice", after: 1, limit: 2) == [add2.change, removal.change])
        // Ahead of the owner's version: the watcher must re-read.
        #expect(try db.changes(owner: "alice", after: 5) == nil)
        #expect(try db.changes(owner: "alice", after: .max) == nil)
        // An owner with no library: nothing after 0, and anything later is ahead.
        #expect(try db.changes(owner: "nobody", after: 0) == [])
        #expect(try db.changes(owner: "nobody", after: 1) == nil)
    }

    /// A catch-up read stays short: changes stop once they list enough ids (always at least
    /// one), and items stop once their bodies reach a size, saying how many ids were looked up.
    @Test func boundedReadsStopByIDsAndBytesAndResumeWhereTheyStopped() throws {
        let db = try open()
        let big = try db.add((0..<5).map { F.entry(Int64($0), size: 1000, seed: $0) }, owner: "alice", nowMs: 10)
        let small = try db.add([F.entry(9, seed: 9)], owner: "alice", nowMs: 20)
        let last = try db.add([F.entry(10, seed: 10), F.entry(11, seed: 11)], owner: "alice", nowMs: 30)
        #expect(try db.changes(owner: "alice", after: 0, maximumIDs: 1) == [big.change], "one change even past the bound")
        #expect(try db.changes(owner: "alice", after: 0, maximumIDs: 6) == [big.change, small.change])
        #expect(try db.changes(owner: "alice", after: 1, maximumIDs: 2) == [small.change, last.change])

        // Items 2500 bytes at a time: the third body reaches it; a missing id is looked up too.
        let ids = big.change.itemIDs
        _ = try db.remove([ids[1]], owner: "alice", nowMs: 40)
        let first = try db.items(owner: "alice", ids: ids[...], maximumBytes: 2500)
        #expect(first.looked == 4 && first.items.map(\.id) == [ids[0], ids[2], ids[3]])
        let rest = try db.items(owner: "alice", ids: ids[first.looked...], maximumBytes: 2500)
        #expect(rest.looked == 1 && rest.items.map(\.id) == [ids[4]])
        #expect(try db.items(owner: "bob", ids: ids[...], maximumBytes: 2500).items.isEmpty, "another owner's ids")
    }

    @Test func changesAreNilWhenTheLogNoLongerReaches() throws {
        var limits = LibraryLimits()
        limits.changeLogLength = 3
        let db = try open(limits: limits)
        var log: [LibraryChange] = []
        for i in 0..<7 {
            log.append(try db.add([F.entry(Int64(i), seed: i)], owner: "alice", nowMs: Int64(i)).change)
        }
        _ = try db.add([F.entry(0, seed: 99)], owner: "bob", nowMs: 0)
        // Versions 5, 6 and 7 are kept: a watcher at 4 resumes, one at 3 or before re-reads.
        #expect(try db.changes(owner: "alice", after: 4) == Array(log[4...]))
        #expect(try db.changes(owner: "alice", after: 6) == [log[6]])
        #expect(try db.changes(owner: "alice", after: 3) == nil)
        #expect(try db.changes(owner: "alice", after: 0) == nil)
        #expect(try db.changes(owner: "bob", after: 0)?.count == 1, "another owner's log is its own")
        // The log is trimmed in the file, not only hidden.
        let raw = try SQLiteConnection(path: scratch.path("library.db"), mode: .readOnly)
        #expect(try raw.scalar("SELECT count(*) FROM changes WHERE owner = 'alice'") == .integer(3))
    }

    // MARK: Owner hash

    @Test func ownerHashIsStablePerFileAndSaltedPerFile() throws {
        let (alice, bob): (String, String)
        do {
            let db = try open()
            alice = db.ownerHash("alice")
            bob = db.ownerHash("bob")
            #expect(db.ownerHash("alice") == alice)
        }
        #expect(alice.utf8.count == 24 && alice.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) })
        #expect(alice != bob)
        #expect(alice != (try open().ownerHash("alice ")))
        // Reopened: the same salt, the same hashes.
        let reopened = try open()
        #expect(reopened.ownerHash("alice") == alice && reopened.ownerHash("bob") == bob)
        // Another database file has its own salt.
        let other = try open("other.db")
        #expect(other.ownerHash("alice") != alice && other.ownerHash("bob") != bob)
    }

    // MARK: Durability

    @Test func everythingIsThereAfterClosingAndReopening() throws {
        let owners: [LibraryOwner]
        let items: [LibraryItem]
        let log: [LibraryChange]?
        do {
            let db = try open()
            let added = try db.add((0..<20).map { F.entry(Int64($0 % 4), size: 200, seed: $0) }, owner: "alice", nowMs: 1)
            _ = try db.remove([added.items[3].id], owner: "alice", nowMs: 2)
            _ = try db.add([F.entry(5, seed: 50)], owner: "bob", nowMs: 3)
            owners = try db.owners()
            items = try F.all(db, owner: "alice")
            log = try db.changes(owner: "alice", after: 0)
        }
        #expect(items.count == 19 && owners.count == 2)
        // Closed cleanly: everything was checkpointed into the one file.
        #expect(!LibraryFile.exists(scratch.path("library.db") + "-wal"))
        let db = try open()
        #expect(try db.schemaVersion() == LibrarySchema.currentVersion)
        #expect(try db.owners() == owners)
        #expect(try F.all(db, owner: "alice") == items)
        #expect(try db.changes(owner: "alice", after: 0) == log)
        // The reopened database goes on from where it was.
        #expect(try db.add([F.entry(9, seed: 9)], owner: "alice", nowMs: 4).change.version == 3)
    }

    @Test func itemsOfAnOpenDatabaseCanBeReadFromTheFileByAnotherConnection() throws {
        let db = try open()
        let added = try db.add([F.entry(1, seed: 1)], owner: "alice", nowMs: 1)
        // Committed means visible to anyone reading the file, before the writer closes.
        let raw = try SQLiteConnection(path: scratch.path("library.db"), mode: .readOnly)
        #expect(try raw.scalar("SELECT id FROM items") == .text(added.items[0].id))
        #expect(try raw.scalar("PRAGMA journal_mode") == .text("wal"))
    }

    // MARK: Backup

    @Test func backupIsAnOpenableCopyUnaffectedByLaterWrites() throws {
        let db = try open()
        _ = try db.add((0..<300).map { F.entry(Int64($0 % 17), size: 300, seed: $0) }, owner: "alice", nowMs: 1)
        let bob = try db.add([F.entry(1, seed: 1000)], owner: "bob", nowMs: 2)
        let owners = try db.owners()
        let aliceItems = try F.all(db, owner: "alice")
        let backup = scratch.path("backup.db")
        try db.backup(to: backup)
        #expect(!LibraryFile.exists(backup + ".partial") && !LibraryFile.exists(backup + "-wal"))
        let backupBytes = try LibraryFile.read(backup)
        #expect(backupBytes.count > 300 * 300)
        #expect(backupBytes[18] == 1 && backupBytes[19] == 1, "the copy is in rollback-journal mode: one self-contained file")

        // Later writes, through this instance and through a second one on the same file.
        let second = try open()
        _ = try db.remove([aliceItems[0].id], owner: "alice", nowMs: 3)
        _ = try second.add([F.entry(99, seed: 99)], owner: "bob", nowMs: 4)
        _ = try second.deleteOwner("alice", nowMs: 5)
        #expect(try db.owner(named: "alice").itemCount == 0)

        // The copy holds the state when it was made, and opens as a library database.
        #expect(try LibraryFile.read(backup) == backupBytes, "the backup file is not touched by later writes")
        do {
            let copy = try LibraryDatabase(path: backup, readOnly: true)
            #expect(try copy.owners() == owners)
            #expect(try F.all(copy, owner: "alice") == aliceItems)
            #expect(try F.all(copy, owner: "bob") == bob.items)
            #expect(copy.ownerHash("alice") == db.ownerHash("alice"), "the salt is copied")
        }
        let writable = try LibraryDatabase(path: backup)
        #expect(try writable.schemaVersion() == LibrarySchema.currentVersion)
        // Opened as a library, a backup is a restore: versions jump so every watcher resyncs.
        #expect(try writable.add([F.entry(1, seed: 1)], owner: "alice", nowMs: 6).owner.version == 2 + LibraryDatabase.restoreVersionGap)

        // A new backup to the same place replaces the old one with the current state.
        let backup2 = scratch.path("backup2.db")
        try second.backup(to: backup2)
        try db.backup(to: backup2)
        let copy2 = try LibraryDatabase(path: backup2, readOnly: true)
        #expect(try copy2.owners() == db.owners())
        #expect(try F.all(copy2, owner: "alice").isEmpty && F.all(copy2, owner: "bob").count == 2)
    }

    @Test func backupsMadeWhileAnotherInstanceWritesAreConsistentSnapshots() async throws {
        let db = try open()
        _ = try db.add((0..<200).map { F.entry(Int64($0), size: 500, seed: $0) }, owner: "alice", nowMs: 0)
        let writer = try open()
        let writes = Task.detached { () throws in
            var removable: [String] = []
            for i in 0..<60 {
                let added = try writer.add((0..<5).map { F.entry(Int64(1000 + i), size: 400, seed: 10_000 + i * 5 + $0) }, owner: "alice", nowMs: Int64(i))
                removable += added.items.map(\.id)
                if i % 3 == 2 {
                    _ = try writer.remove([removable.removeFirst(), removable.removeFirst()], owner: "alice", nowMs: Int64(i))
                }
            }
        }
        var versions: [UInt64] = []
        for n in 0..<8 {
            let backup = scratch.path("backup-\(n).db")
            try db.backup(to: backup)
            let copy = try LibraryDatabase(path: backup, readOnly: true)
            let owner = try copy.owner(named: "alice")
            let items = try F.all(copy, owner: "alice")
            // Each copy is one committed state: the counts match the items and the log replays to them.
            #expect(owner.itemCount == items.count, "backup \(n)")
            #expect(owner.bytes == items.reduce(0) { $0 + $1.entry.body.count }, "backup \(n)")
            let log = try #require(try copy.changes(owner: "alice", after: 0), "backup \(n)")
            #expect(log.map(\.version) == Array(1...owner.version), "backup \(n)")
            var replay = Set<String>()
            for change in log {
                switch change.kind {
                case .added: replay.formUnion(change.itemIDs)
                case .removed: replay.subtract(change.itemIDs)
                case .cleared: replay = []
                }
            }
            #expect(replay == Set(items.map(\.id)), "backup \(n)")
            versions.append(owner.version)
        }
        _ = try await writes.value
        #expect(versions == versions.sorted(), "later backups never hold older states")
        #expect(try db.owner(named: "alice").version == 1 + 60 + 20)
    }

    // MARK: Size limit

    @Test func aTinyDatabaseSizeLimitRefusesAddsAndKeepsWhatIsThere() throws {
        let items: [LibraryItem]
        let owner: LibraryOwner
        do {
            let db = try open()
            let added = try db.add((0..<10).map { F.entry(Int64($0), size: 100, seed: $0) }, owner: "alice", nowMs: 1)
            items = try F.all(db, owner: "alice")
            owner = added.owner
        }
        let size = try LibraryFile.read(scratch.path("library.db")).count
        do {
            // A limit below the file's size: nothing more fits (SQLite keeps the pages it has).
            let db = try open(maximumDatabaseBytes: 4096)
            let big = (0..<10).map { F.entry(Int64(100 + $0), size: 30_000, seed: 100 + $0) }
            #expect(F.failure { _ = try db.add(big, owner: "alice", nowMs: 2) } == .resourceExhausted)
            #expect(F.failure { _ = try db.add(big, owner: "bob", nowMs: 2) } == .resourceExhausted)
            // It still reads, and nothing of the failed adds is there.
            #expect(try F.all(db, owner: "alice") == items)
            #expect(try db.owner(named: "alice") == owner)
            #expect(try db.owners() == [owner])
            #expect(try db.changes(owner: "alice", after: 0)?.count == 1)
        }
        #expect(try LibraryFile.read(scratch.path("library.db")).count == size, "the file did not grow")
        // Without the limit the same add works: the limit belongs to the instance, not the file.
        let db = try open()
        #expect(try F.all(db, owner: "alice") == items)
        let big = (0..<10).map { F.entry(Int64(100 + $0), size: 30_000, seed: 100 + $0) }
        #expect(try db.add(big, owner: "alice", nowMs: 3).owner.itemCount == 20)
    }

    // MARK: Read-only

    @Test func aReadOnlyInstanceReadsAndRefusesWrites() throws {
        let owner: LibraryOwner
        let items: [LibraryItem]
        let hash: String
        do {
            let db = try open()
            items = try db.add((0..<4).map { F.entry(Int64($0), seed: $0) }, owner: "alice", nowMs: 1).items.reversed()
            owner = try db.owner(named: "alice")
            hash = db.ownerHash("alice")
        }
        let before = try LibraryFile.read(scratch.path("library.db"))
        do {
            let reader = try open(readOnly: true)
            #expect(try reader.schemaVersion() == LibrarySchema.currentVersion)
            #expect(try reader.owners() == [owner])
            #expect(try F.all(reader, owner: "alice") == items)
            #expect(try reader.changes(owner: "alice", after: 0)?.count == 1)
            #expect(reader.ownerHash("alice") == hash)
            #expect(F.failure { _ = try reader.add([F.entry(9, seed: 9)], owner: "alice", nowMs: 2) } == .unavailable)
            #expect(F.failure { _ = try reader.add([F.entry(9, seed: 9)], owner: "bob", nowMs: 2) } == .unavailable)
            #expect(F.failure { _ = try reader.remove([items[0].id], owner: "alice", nowMs: 2) } == .unavailable)
            #expect(F.failure { _ = try reader.deleteOwner("alice", nowMs: 2) } == .unavailable)
            #expect(try reader.owners() == [owner])
            #expect(try F.all(reader, owner: "alice") == items)
        }
        #expect(try LibraryFile.read(scratch.path("library.db")) == before, "a reader alone leaves the file as it was")

        // Beside a writer: the reader sees each commit.
        let writer = try open()
        let reader = try open(readOnly: true)
        let added = try writer.add([F.entry(10, seed: 10)], owner: "alice", nowMs: 3)
        #expect(try reader.owner(named: "alice") == added.owner)
        #expect(try reader.items(owner: "alice", ids: [added.items[0].id]) == added.items)
        #expect(F.failure { _ = try reader.remove([added.items[0].id], owner: "alice", nowMs: 4) } == .unavailable)
        #expect(try writer.owner(named: "alice") == added.owner)
    }

    @Test func aReadOnlyInstanceDoesNotCreateAMissingFile() throws {
        #expect(F.failure { _ = try open(readOnly: true) } == .unavailable)
        #expect(try scratch.names() == [])
    }
}
