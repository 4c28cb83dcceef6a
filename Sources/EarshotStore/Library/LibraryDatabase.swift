import EarshotCrypto
import EarshotSystem
import SQLite

/// The per-owner libraries of matched items, in one SQLite file (`<state>/library.db`).
///
/// WAL mode with `synchronous = FULL`: a write returns only after its transaction is on disk,
/// so an acknowledged change survives a crash or a power cut, and an unacknowledged one is
/// either whole or absent. Every write is one `BEGIN IMMEDIATE` transaction, or a savepoint in
/// one shared by several (`transaction`, group commit), and one owner thread serialises the
/// writes, so no write ever meets SQLITE_BUSY from another writer.
///
/// Not thread-safe: one thread (or serial queue) at a time per instance. Readers may open a
/// second instance on the same file (`readOnly`) and read while the writer writes.
public final class LibraryDatabase: @unchecked Sendable {
    public let path: String
    public let limits: LibraryLimits
    private let db: SQLiteConnection
    private let salt: [UInt8]

    /// Opens (creating when missing, unless `readOnly`) and checks the database: `quick_check`
    /// must pass (unless `verify` is false: a second connection to a file just checked), then
    /// missing migrations run. A damaged or foreign file fails with `.dataLoss` and is left
    /// where it is: `setAside(_:stamp:)` moves it. With `callerCheckpoints`, commits never copy
    /// the WAL into the database file themselves: the caller runs `checkpoint()` between writes.
    public init(path: String, limits: LibraryLimits = LibraryLimits(), maximumDatabaseBytes: Int? = nil,
                readOnly: Bool = false, verify: Bool = true, callerCheckpoints: Bool = false) throws(LibraryError) {
        self.path = path
        self.limits = limits
        do {
            db = try SQLiteConnection(path: path, mode: readOnly ? .readOnly : .create)
        } catch {
            throw Self.failure(error, doing: "the library database \(path)")
        }
        db.setBusyTimeout(milliseconds: 5000)
        do {
            let findings = verify ? try db.quickCheck() : []
            if !findings.isEmpty {
                throw LibraryError(.dataLoss, "the library database \(path) is damaged (quick_check: \(findings.prefix(3).joined(separator: "; ")))")
            }
            let version = try db.userVersion()
            if version > LibrarySchema.currentVersion {
                throw LibraryError(.unavailable, "the library database \(path) has schema version \(version), newer than this earshotd knows (\(LibrarySchema.currentVersion)): it was written by a newer release")
            }
            if !readOnly {
                // WAL lets readers (Items, backups) go on while a write commits; FULL makes each
                // commit durable before the call returns.
                if case .text(let mode)? = try db.scalar("PRAGMA journal_mode = WAL"), mode.lowercased() != "wal" {
                    throw LibraryError(.unavailable, "the library database \(path) cannot use WAL mode (journal mode \(mode))")
                }
                try db.execute("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; PRAGMA journal_size_limit = 1048576")
                if callerCheckpoints { try db.execute("PRAGMA wal_autocheckpoint = 0") }
                if let maximumDatabaseBytes {
                    let pageSize: Int64 = if case .integer(let p)? = try db.scalar("PRAGMA page_size") { p } else { 4096 }
                    try db.execute("PRAGMA max_page_count = \(max(1, Int64(maximumDatabaseBytes) / pageSize))")
                }
                let connection = db  // not `self` in the closure: init is not over
                for step in Int(version)..<LibrarySchema.migrations.count {
                    try connection.immediateTransaction { () throws(SQLiteError) in
                        try connection.execute(LibrarySchema.migrations[step])
                        try connection.setUserVersion(Int64(step + 1))
                    }
                }
            } else if version < LibrarySchema.currentVersion {
                throw LibraryError(.unavailable, "the library database \(path) has schema version \(version); open it read-write once to migrate it")
            }
            if !readOnly, try db.scalar("SELECT 1 FROM meta WHERE key = 'backup_copy'") != nil {
                try Self.startAfterRestore(db)
            }
            guard case .blob(let s)? = try db.scalar("SELECT value FROM meta WHERE key = 'owner_salt'"), !s.isEmpty else {
                throw LibraryError(.dataLoss, "the library database \(path) has no owner salt: it is damaged")
            }
            salt = s
        } catch {
            // Closing would checkpoint the WAL into a file that may be damaged and delete the
            // WAL: the files are left as they are, for setAside.
            db.setCheckpointOnClose(false)
            if let error = error as? LibraryError { throw error }
            if let error = error as? SQLiteError { throw Self.failure(error, doing: "the library database \(path)") }
            throw LibraryError(.internal, "\(error)")
        }
    }

    /// False when SQLite could open the file only for reading (permissions, a read-only mount):
    /// reads work, writes fail.
    public var isWritable: Bool { !db.isReadOnly }

    /// How far every owner's version jumps when a backup is opened as the library: further than
    /// any client can have got after the backup was taken, so every watcher resyncs.
    public static let restoreVersionGap: UInt64 = 1 << 32

    /// A backup copy opened as the library (an operator restored it): clients may have seen
    /// versions after the copy was taken, which the copy's own versions would repeat with other
    /// contents. Every owner's version jumps by `restoreVersionGap` and the change log is
    /// emptied, so any watcher gets RESYNC and re-reads; then the mark is removed.
    private static func startAfterRestore(_ db: SQLiteConnection) throws(SQLiteError) {
        try db.immediateTransaction { () throws(SQLiteError) in
            try db.run("UPDATE owners SET version = version + ?", [.integer(Int64(restoreVersionGap))])
            try db.run("DELETE FROM changes")
            try db.run("DELETE FROM meta WHERE key = 'backup_copy'")
        }
    }

    /// The database's schema version (for tests and diagnostics).
    public func schemaVersion() throws(LibraryError) -> Int64 {
        try sql { () throws(SQLiteError) in try db.userVersion() }
    }

    /// The name others see for `owner` on the PUB socket: a salted hash (the salt is this
    /// database's own and never leaves it), so notices do not tell who owns what. Reads only
    /// the salt, fixed at open: safe from any thread.
    public func ownerHash(_ owner: String) -> String {
        var h = SHA256()
        h.update(salt)
        h.update(Array(owner.utf8))
        return SHA256.hex(Array(h.finish().prefix(12)))
    }

    // MARK: Writes

    /// Adds `entries` to `owner`'s library, all or nothing.
    public func add(_ entries: [LibraryEntry], owner: String, nowMs: Int64) throws(LibraryError) -> LibraryCommit {
        guard !entries.isEmpty else { throw LibraryError(.invalidArgument, "no items to add") }
        guard entries.count <= limits.maximumBatch else {
            throw LibraryError(.invalidArgument, "\(entries.count) items in one call; at most \(limits.maximumBatch)")
        }
        for (i, e) in entries.enumerated() where e.body.count > limits.maximumItemBytes {
            throw LibraryError(.invalidArgument, "item \(i + 1) is \(e.body.count) bytes; at most \(limits.maximumItemBytes)")
        }
        return try write { () throws(LibraryError) in
            var owner = try self.owner(owner, creating: true)
            let newBytes = entries.reduce(0) { $0 + $1.body.count }
            if owner.itemCount + entries.count > limits.maximumItems {
                throw LibraryError(.resourceExhausted, "\(owner.name)'s library holds \(owner.itemCount) items; adding \(entries.count) would pass its limit of \(limits.maximumItems) (library.max_items_per_owner): remove some first")
            }
            if owner.bytes + newBytes > limits.maximumBytes {
                throw LibraryError(.resourceExhausted, "\(owner.name)'s library holds \(owner.bytes) bytes; adding \(newBytes) would pass its limit of \(limits.maximumBytes) (library.max_bytes_per_owner): remove some first")
            }
            var items: [LibraryItem] = []
            for e in entries {
                let id = Self.newID()
                try sql { () throws(SQLiteError) in
                    try db.run("""
                        INSERT INTO items (id, owner, added_ms, matched_ms, catalog, catalog_version, custom_properties, body)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                        """, [.text(id), .text(owner.name), .integer(nowMs), .integer(e.matchedAtMs), .text(e.catalog),
                              .integer(Int64(bitPattern: e.catalogVersion)), .text(e.customProperties), .blob(e.body)])
                }
                items.append(LibraryItem(id: id, addedAtMs: nowMs, entry: e, sequence: db.lastInsertedRowID))
            }
            owner.itemCount += entries.count
            owner.bytes += newBytes
            let change = try record(.added, ids: items.map(\.id), owner: &owner, nowMs: nowMs)
            return LibraryCommit(change: change, owner: owner, items: items, changedCount: items.count)
        }
    }

    /// Removes `ids` from `owner`'s library, all or nothing: an id that is not one of the
    /// owner's items (whoever's it is) fails the call with `.notFound`.
    public func remove(_ ids: [String], owner: String, nowMs: Int64) throws(LibraryError) -> LibraryCommit {
        var unique: [String] = []
        var seen = Set<String>()
        for id in ids where seen.insert(id).inserted { unique.append(id) }
        guard !unique.isEmpty else { throw LibraryError(.invalidArgument, "no item ids to remove") }
        guard unique.count <= limits.maximumBatch else {
            throw LibraryError(.invalidArgument, "\(unique.count) ids in one call; at most \(limits.maximumBatch)")
        }
        return try write { () throws(LibraryError) in
            var owner = try self.owner(owner, creating: false)
            var freed = 0
            for id in unique {
                let size: Int64? = try sql { () throws(SQLiteError) in
                    if case .integer(let n)? = try db.scalar("SELECT length(body) FROM items WHERE id = ? AND owner = ?", [.text(id), .text(owner.name)]) {
                        return n
                    }
                    return nil
                }
                guard let size else { throw LibraryError(.notFound, "no item \(id) in your library") }
                try sql { () throws(SQLiteError) in try db.run("DELETE FROM items WHERE id = ?", [.text(id)]) }
                freed += Int(size)
            }
            owner.itemCount -= unique.count
            owner.bytes -= freed
            let change = try record(.removed, ids: unique, owner: &owner, nowMs: nowMs)
            return LibraryCommit(change: change, owner: owner, items: [], changedCount: unique.count)
        }
    }

    /// Deletes every item of `owner` (an admin resetting a client). The owner's version goes
    /// on, so its watchers see one `.cleared` change.
    public func deleteOwner(_ name: String, nowMs: Int64) throws(LibraryError) -> LibraryCommit {
        try write { () throws(LibraryError) in
            guard var owner = try find(name) else { throw LibraryError(.notFound, "no library for \(name)") }
            try sql { () throws(SQLiteError) in try db.run("DELETE FROM items WHERE owner = ?", [.text(name)]) }
            let deleted = owner.itemCount
            owner.itemCount = 0
            owner.bytes = 0
            let change = try record(.cleared, ids: [], owner: &owner, nowMs: nowMs)
            return LibraryCommit(change: change, owner: owner, items: [], changedCount: deleted)
        }
    }

    // MARK: Reads

    /// One page of `owner`'s items, newest match first.
    public func items(owner name: String, _ query: LibraryQuery) throws(LibraryError) -> LibraryPage {
        guard (1...1000).contains(query.limit) else { throw LibraryError(.invalidArgument, "page size \(query.limit); 1 to 1000") }
        // With a property filter the walk is driven by item_properties, whose key is (owner, key,
        // value, matched_ms DESC, sequence DESC): only items holding the value are read, in order.
        let order = query.property == nil ? "i" : "p"
        var conditions = ["\(order).owner = ?"]
        var values: [SQLiteValue] = [.text(name)]
        if let p = query.property {
            guard !p.key.isEmpty else { throw LibraryError(.invalidArgument, "custom property key: must not be empty") }
            // Compared as JSON, type included: "3" and 3 differ, true is not 1, and objects compare
            // by their minified text (the form item_properties stores).
            let value: String = try sql { () throws(SQLiteError) in
                guard try db.scalar("SELECT json_valid(?)", [.text(p.value)]) == .integer(1),
                      case .text(let v)? = try db.scalar("SELECT json_type(?1) || ':' || json_quote(json_extract(?1, '$'))", [.text(p.value)])
                else { return "" }
                return v
            }
            guard !value.isEmpty else {
                throw LibraryError(.invalidArgument, "custom property value \(p.value) is not JSON (a string needs quotes: '\"jazz\"')")
            }
            conditions += ["p.key = ?", "p.value = ?"]
            values += [.text(p.key), .text(value)]
        }
        if let c = query.catalog { conditions.append("i.catalog = ?"); values.append(.text(c)) }
        if let from = query.matchedFromMs { conditions.append("\(order).matched_ms >= ?"); values.append(.integer(from)) }
        if let before = query.matchedBeforeMs { conditions.append("\(order).matched_ms < ?"); values.append(.integer(before)) }
        if let after = query.after {
            // The first term lets SQLite start the index range at the cursor.
            conditions.append("\(order).matched_ms <= ? AND (\(order).matched_ms < ? OR \(order).sequence < ?)")
            values += [.integer(after.matchedAtMs), .integer(after.matchedAtMs), .integer(after.sequence)]
        }
        values.append(.integer(Int64(query.limit + 1)))
        // The owner's version is read before the page: a page never holds less than its version
        // says (a change committed in between is replayed by a watcher starting there, harmlessly).
        let owner = try find(name) ?? .empty(name)
        let source = query.property == nil ? "items i" : "item_properties p JOIN items i ON i.sequence = p.sequence"
        let sqlText = """
            SELECT \(Self.itemColumns) FROM \(source) WHERE \(conditions.joined(separator: " AND "))
            ORDER BY \(order).matched_ms DESC, \(order).sequence DESC LIMIT ?
            """
        let (items, more): ([LibraryItem], Bool) = try sql { () throws(SQLiteError) in
            let s = try db.statement(sqlText, values)
            defer { s.release() }
            var rows: [LibraryItem] = []
            var bytes = 0
            while try s.step() {
                let item = Self.item(s)
                // A full page, or one that would outgrow a message (items may be up to 64 KiB):
                // more follow.
                if rows.count == query.limit || (!rows.isEmpty && bytes + item.entry.body.count > Self.maximumPageBytes) {
                    return (rows, true)
                }
                bytes += item.entry.body.count
                rows.append(item)
            }
            return (rows, false)
        }
        let next = more ? items.last.map(LibraryCursor.init) : nil
        return LibraryPage(items: items, next: next, owner: owner)
    }

    /// The most item bytes one page carries (bodies): a page of large items ends early, with a
    /// cursor, so a reply stays well under the RPC message limit.
    public static let maximumPageBytes = 1 << 20

    /// `owner`'s items among `ids`, in the order of `ids` (missing ones left out).
    public func items(owner name: String, ids: [String]) throws(LibraryError) -> [LibraryItem] {
        try items(owner: name, ids: ids[...], maximumBytes: .max).items
    }

    /// `owner`'s items among the first ids of `ids`, in their order (missing ones left out),
    /// stopping after the id whose item brings the bodies read to `maximumBytes`: `looked` says
    /// how many ids were looked up, so the next call starts after them.
    public func items(owner name: String, ids: ArraySlice<String>, maximumBytes: Int) throws(LibraryError) -> (items: [LibraryItem], looked: Int) {
        try sql { () throws(SQLiteError) in
            var found: [LibraryItem] = []
            var bytes = 0
            var looked = 0
            for id in ids {
                guard bytes < maximumBytes else { break }
                let s = try db.statement("""
                    SELECT \(Self.itemColumns) FROM items i WHERE i.id = ? AND i.owner = ?
                    """, [.text(id), .text(name)])
                if try s.step() {
                    let item = Self.item(s)
                    bytes += item.entry.body.count
                    found.append(item)
                }
                s.release()
                looked += 1
            }
            return (found, looked)
        }
    }

    /// The changes of `owner` after `version`, oldest first, at most `limit`, and no more after
    /// the one that brings the item ids listed to `maximumIDs` (so a read stays short however
    /// large the changes); nil when the log no longer reaches back that far (or `version` is
    /// ahead of the owner's), so the watcher must re-read its items.
    public func changes(owner name: String, after version: UInt64, limit: Int = 1000, maximumIDs: Int = .max) throws(LibraryError) -> [LibraryChange]? {
        let owner = try find(name) ?? .empty(name)
        if version == owner.version { return [] }
        if version > owner.version { return nil }
        let changes: [LibraryChange] = try sql { () throws(SQLiteError) in
            let s = try db.statement("""
                SELECT version, kind, item_ids, at_ms FROM changes WHERE owner = ? AND version > ? ORDER BY version LIMIT ?
                """, [.text(name), .integer(Int64(version)), .integer(Int64(limit))])
            defer { s.release() }
            var out: [LibraryChange] = []
            var ids = 0
            while ids < maximumIDs, try s.step() {
                let change = LibraryChange(version: UInt64(s.int64(0)), kind: LibraryChange.Kind(rawValue: s.int64(1)) ?? .added,
                                           itemIDs: Self.decodeIDs(s.text(2)), atMs: s.int64(3))
                ids += change.itemIDs.count
                out.append(change)
            }
            return out
        }
        guard changes.first?.version == version + 1 else { return nil }
        return changes
    }

    /// Every owner with a library (including ones whose key is no longer allowed), by name.
    public func owners() throws(LibraryError) -> [LibraryOwner] {
        try sql { () throws(SQLiteError) in
            let s = try db.statement("SELECT \(Self.ownerColumns) FROM owners ORDER BY name")
            defer { s.release() }
            var out: [LibraryOwner] = []
            while try s.step() { out.append(Self.owner(s)) }
            return out
        }
    }

    /// `name`'s library state (empty when it never added anything).
    public func owner(named name: String) throws(LibraryError) -> LibraryOwner {
        try find(name) ?? .empty(name)
    }

    // MARK: Backup and damage

    /// Writes a consistent copy of the database to `destination` with SQLite's online backup
    /// (into a temporary file next to it, then renamed): safe while others write.
    public func backup(to destination: String) throws(LibraryError) {
        let temporary = destination + ".partial"
        _ = try? Directory.remove(temporary)
        do {
            do {
                let copy = try SQLiteConnection(path: temporary, mode: .create)
                try db.backup(into: copy)
                // The copy is written in rollback-journal mode and synced by its commit. It is
                // marked, so that opened as the library (restored) it makes every client resync.
                try copy.execute("PRAGMA journal_mode = DELETE")
                try copy.execute("PRAGMA synchronous = FULL")
                try copy.run("INSERT OR REPLACE INTO meta (key, value) VALUES ('backup_copy', x'01')")
            }
            try Directory.rename(temporary, to: destination)
        } catch let error as SQLiteError {
            _ = try? Directory.remove(temporary)
            throw Self.failure(error, doing: "backup to \(destination)")
        } catch let error as SystemError {
            _ = try? Directory.remove(temporary)
            throw LibraryError(.unavailable, error.message)
        } catch {
            throw LibraryError(.internal, "\(error)")
        }
    }

    /// Where `setAside(_:stamp:)` moves `path`.
    public static func asidePath(_ path: String, stamp: String) -> String { "\(path).damaged-\(stamp)" }

    /// Moves a damaged database file and its WAL and shared-memory files aside as
    /// `<path>.damaged-<stamp>` (never deleting anything); returns the new path.
    public static func setAside(_ path: String, stamp: String) throws(SystemError) -> String {
        let aside = asidePath(path, stamp: stamp)
        // A rename replaces its target: an earlier file set aside with the same stamp would be lost.
        for suffix in ["", "-wal", "-shm"] where FileIdentity(path: aside + suffix) != nil {
            throw SystemError("cannot set \(path) aside: \(aside + suffix) exists", code: 0)
        }
        for suffix in ["-wal", "-shm"] where FileIdentity(path: path + suffix) != nil {
            try Directory.rename(path + suffix, to: aside + suffix)
        }
        try Directory.rename(path, to: aside)
        return aside
    }

    // MARK: Helpers

    /// Runs reads as one read transaction: they see one snapshot, and the WAL's read lock is
    /// taken once for all of them rather than once per statement.
    public func snapshot<T>(_ body: () throws(LibraryError) -> T) throws(LibraryError) -> T {
        guard !db.inTransaction else { return try body() }
        try sql { () throws(SQLiteError) in try db.execute("BEGIN") }
        defer { if db.inTransaction { try? db.execute("COMMIT") } }
        return try body()
    }

    /// Runs several writes as one transaction (group commit: one sync for all). Each write inside
    /// stays all or nothing on its own, in a savepoint: one that fails is undone and the others
    /// go on. Nothing is durable until this returns; if it throws, none of them happened.
    public func transaction(_ body: () throws(LibraryError) -> Void) throws(LibraryError) {
        try sql { () throws(SQLiteError) in try db.execute("BEGIN IMMEDIATE") }
        group = .open
        defer { group = nil }
        do throws(LibraryError) {
            try body()
            // SQLite rolled the whole transaction back under one write (an I/O error, out of
            // memory): the writes before it are gone too, so none of them may be reported done.
            if case .aborted(let error) = group { throw error }
            try sql { () throws(SQLiteError) in try db.execute("COMMIT") }
        } catch {
            if db.inTransaction { try? db.execute("ROLLBACK") }
            throw error
        }
    }

    /// Inside `transaction`: open, or aborted by SQLite (with why).
    private enum Group { case open, aborted(LibraryError) }
    private var group: Group?

    /// Copies the WAL's committed pages into the database file when no reader needs them
    /// (`wal_checkpoint(PASSIVE)`). Opened with `callerCheckpoints`, the writer never checkpoints
    /// inside a commit, so no call pays for it; the daemon calls this between writes.
    public func checkpoint() throws(LibraryError) {
        try sql { () throws(SQLiteError) in try db.execute("PRAGMA wal_checkpoint(PASSIVE)") }
    }

    /// Runs `body` as one write: its own `BEGIN IMMEDIATE` transaction, committed (and synced)
    /// when it returns and rolled back when it throws — or, inside `transaction`, a savepoint.
    private func write<T>(_ body: () throws(LibraryError) -> T) throws(LibraryError) -> T {
        switch group {
        case .aborted(let error)?:
            throw error
        case .open?:
            try sql { () throws(SQLiteError) in try db.execute("SAVEPOINT one_write") }
            do {
                let result = try body()
                try sql { () throws(SQLiteError) in try db.execute("RELEASE one_write") }
                return result
            } catch {
                if db.inTransaction {
                    try? db.execute("ROLLBACK TO one_write; RELEASE one_write")
                } else {
                    group = .aborted(LibraryError(error.kind, "the group of writes was rolled back: \(error.message)"))
                }
                throw error
            }
        case nil:
            break
        }
        try sql { () throws(SQLiteError) in try db.execute("BEGIN IMMEDIATE") }
        do {
            let result = try body()
            try sql { () throws(SQLiteError) in try db.execute("COMMIT") }
            return result
        } catch {
            if db.inTransaction { try? db.execute("ROLLBACK") }
            throw error
        }
    }

    /// Bumps the owner's version and logs the change, trimming the log to its length.
    private func record(_ kind: LibraryChange.Kind, ids: [String], owner: inout LibraryOwner, nowMs: Int64) throws(LibraryError) -> LibraryChange {
        owner.version += 1
        owner.changedAtMs = nowMs
        let change = LibraryChange(version: owner.version, kind: kind, itemIDs: ids, atMs: nowMs)
        let o = owner
        try sql { () throws(SQLiteError) in
            try db.run("UPDATE owners SET version = ?, item_count = ?, bytes = ?, changed_ms = ? WHERE name = ?",
                       [.integer(Int64(o.version)), .integer(Int64(o.itemCount)), .integer(Int64(o.bytes)), .integer(nowMs), .text(o.name)])
            try db.run("INSERT INTO changes (owner, version, kind, item_ids, at_ms) VALUES (?, ?, ?, ?, ?)",
                       [.text(o.name), .integer(Int64(o.version)), .integer(kind.rawValue), .text(Self.encodeIDs(ids)), .integer(nowMs)])
            let oldest = Int64(o.version) - Int64(limits.changeLogLength)
            if oldest > 0 { try db.run("DELETE FROM changes WHERE owner = ? AND version <= ?", [.text(o.name), .integer(oldest)]) }
        }
        return change
    }

    private func owner(_ name: String, creating: Bool) throws(LibraryError) -> LibraryOwner {
        if let found = try find(name) { return found }
        guard creating else { return .empty(name) }
        try sql { () throws(SQLiteError) in
            try db.run("INSERT INTO owners (name, version, item_count, bytes, changed_ms) VALUES (?, 0, 0, 0, 0)", [.text(name)])
        }
        return .empty(name)
    }

    private func find(_ name: String) throws(LibraryError) -> LibraryOwner? {
        try sql { () throws(SQLiteError) in
            let s = try db.statement("SELECT \(Self.ownerColumns) FROM owners WHERE name = ?", [.text(name)])
            defer { s.release() }
            return try s.step() ? Self.owner(s) : nil
        }
    }

    /// The columns `owner(_:)` reads, in its order.
    private static let ownerColumns = "name, version, item_count, bytes, changed_ms"

    private static func owner(_ s: SQLiteStatement) -> LibraryOwner {
        LibraryOwner(name: s.text(0), version: UInt64(s.int64(1)), itemCount: Int(s.int64(2)), bytes: Int(s.int64(3)), changedAtMs: s.int64(4))
    }

    /// The columns `item(_:)` reads, in its order, of `items` as `i`.
    private static let itemColumns = "i.sequence, i.id, i.added_ms, i.matched_ms, i.catalog, i.catalog_version, i.custom_properties, i.body"

    private static func item(_ s: SQLiteStatement) -> LibraryItem {
        LibraryItem(id: s.text(1), addedAtMs: s.int64(2),
                    entry: LibraryEntry(matchedAtMs: s.int64(3), catalog: s.text(4), catalogVersion: UInt64(bitPattern: s.int64(5)),
                                        customProperties: s.text(6), body: s.blob(7)),
                    sequence: s.int64(0))
    }

    /// Runs SQLite calls, turning their errors into library errors.
    private func sql<T>(_ body: () throws(SQLiteError) -> T) throws(LibraryError) -> T {
        do { return try body() } catch { throw Self.failure(error, doing: "library database") }
    }

    /// A library error for an SQLite failure, by what it means for the caller.
    static func failure(_ error: SQLiteError, doing what: String) -> LibraryError {
        if error.isConstraint { return LibraryError(.invalidArgument, "\(what): \(error.message)") }
        if error.isCorrupt { return LibraryError(.dataLoss, "\(what): the file is damaged or not a library database (\(error.message))") }
        if error.isFull { return LibraryError(.resourceExhausted, "\(what): no space left (\(error.message)): free disk space, remove items, or raise library.max_database_mb if it is set") }
        if error.isReadOnly { return LibraryError(.unavailable, "\(what): cannot write (\(error.message)): check the state folder's permissions and mount") }
        if error.cannotOpen || error.isIOError || error.isBusy { return LibraryError(.unavailable, "\(what): \(error.message)") }
        return LibraryError(.internal, "\(what): \(error.message)")
    }

    /// 128 random bits as 32 hex digits.
    private static func newID() -> String {
        var g = SystemRandomNumberGenerator()
        let bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &g) }
        return SHA256.hex(bytes)
    }

    /// Item ids are hex, so a comma list is unambiguous.
    private static func encodeIDs(_ ids: [String]) -> String { ids.joined(separator: ",") }
    private static func decodeIDs(_ text: String) -> [String] { text.isEmpty ? [] : text.split(separator: ",").map(String.init) }
}
