import CSQLite

/// One connection to an SQLite database file (`sqlite3_open_v2`).
///
/// A connection is used by one thread at a time: its owner serialises calls (SQLite is built
/// thread-safe on Debian, but statements and transactions belong to their connection).
/// Prepared statements are cached by their SQL text, so hot queries are parsed once.
public final class SQLiteConnection: @unchecked Sendable {
    public enum Mode: Sendable {
        /// Read and write; the file is created when missing.
        case create
        /// Read and write an existing file.
        case readWrite
        case readOnly
    }

    public let path: String
    let handle: OpaquePointer
    private var cache: [String: SQLiteStatement] = [:]

    public init(path: String, mode: Mode = .create) throws(SQLiteError) {
        self.path = path
        var flags: Int32 = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        switch mode {
        case .create: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        case .readWrite: flags |= SQLITE_OPEN_READWRITE
        case .readOnly: flags |= SQLITE_OPEN_READONLY
        }
        // The path goes to C as a C string: one with a NUL inside would open the file before it.
        guard !path.utf8.contains(0) else { throw SQLiteError(code: SQLITE_CANTOPEN, message: "cannot open: a path cannot contain a NUL byte") }
        var db: OpaquePointer?
        let result = sqlite3_open_v2(path, &db, flags, nil)
        guard result == SQLITE_OK, let db else {
            let error = SQLiteError.last(db, result, doing: "cannot open")
            sqlite3_close_v2(db)
            throw error
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
    }

    deinit {
        cache.removeAll()  // statements are finalized before the connection closes
        sqlite3_close_v2(handle)
    }

    /// Runs one or more statements that return no rows (schema, pragmas, BEGIN/COMMIT).
    public func execute(_ sql: String) throws(SQLiteError) {
        var message: UnsafeMutablePointer<CChar>?
        let result = sqlite3_exec(handle, sql, nil, nil, &message)
        guard result == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(result))
            sqlite3_free(message)
            throw SQLiteError(code: result, extendedCode: sqlite3_extended_errcode(handle), message: "\(Self.firstWords(sql)): \(text)")
        }
    }

    /// Runs `body` in `BEGIN IMMEDIATE` … `COMMIT` (the write lock taken at once); rolled back
    /// when it throws.
    public func immediateTransaction(_ body: () throws(SQLiteError) -> Void) throws(SQLiteError) {
        try execute("BEGIN IMMEDIATE")
        do {
            try body()
            try execute("COMMIT")
        } catch {
            if inTransaction { try? execute("ROLLBACK") }
            throw error
        }
    }

    /// A new prepared statement, owned by the caller.
    public func prepare(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        var statement: OpaquePointer?
        let result = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard result == SQLITE_OK, let statement else {
            throw SQLiteError.last(handle, result, doing: "cannot prepare \(Self.firstWords(sql))")
        }
        return SQLiteStatement(statement, connection: self)
    }

    /// The cached statement for `sql`, reset with `values` bound: prepared on first use only.
    public func statement(_ sql: String, _ values: [SQLiteValue] = []) throws(SQLiteError) -> SQLiteStatement {
        let statement: SQLiteStatement
        if let cached = cache[sql] {
            statement = cached
        } else {
            statement = try prepare(sql)
            cache[sql] = statement
        }
        try statement.reset(binding: values)
        return statement
    }

    /// Runs `sql` (cached) with `values`, ignoring any rows; returns the number of rows changed.
    @discardableResult
    public func run(_ sql: String, _ values: [SQLiteValue] = []) throws(SQLiteError) -> Int {
        let s = try statement(sql, values)
        while try s.step() {}
        s.release()
        return Int(sqlite3_changes64(handle))
    }

    /// The first column of the first row of `sql`, nil when it returns none.
    public func scalar(_ sql: String, _ values: [SQLiteValue] = []) throws(SQLiteError) -> SQLiteValue? {
        let s = try statement(sql, values)
        defer { s.release() }
        return try s.step() ? s.value(0) : nil
    }

    /// `PRAGMA user_version`: the schema version the application stored.
    public func userVersion() throws(SQLiteError) -> Int64 {
        if case .integer(let v)? = try scalar("PRAGMA user_version") { return v }
        return 0
    }

    public func setUserVersion(_ version: Int64) throws(SQLiteError) {
        try execute("PRAGMA user_version = \(version)")
    }

    /// `PRAGMA quick_check`: empty when the file is sound, else SQLite's findings (at most `limit`).
    public func quickCheck(limit: Int = 10) throws(SQLiteError) -> [String] {
        let s = try prepare("PRAGMA quick_check(\(limit))")
        var findings: [String] = []
        while try s.step() {
            let line = s.text(0)
            if line != "ok" { findings.append(line) }
        }
        return findings
    }

    /// Waits up to `milliseconds` for another connection's lock instead of failing at once.
    public func setBusyTimeout(milliseconds: Int32) {
        sqlite3_busy_timeout(handle, milliseconds)
    }

    /// Whether closing this connection, when it is the file's last, checkpoints the WAL into the
    /// database file and deletes the WAL (the default). Off, the files are left as they are: for
    /// a damaged database, whose WAL must not be written into it.
    public func setCheckpointOnClose(_ enabled: Bool) {
        csqlite_set_checkpoint_on_close(handle, enabled ? 1 : 0)
    }

    /// Whether the connection cannot write its database: opened read-only, or opened read-write
    /// on a file SQLite could only open for reading (permissions, a read-only mount).
    public var isReadOnly: Bool { sqlite3_db_readonly(handle, "main") == 1 }

    /// The rowid of the last row this connection inserted.
    public var lastInsertedRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Whether a transaction is open (false in autocommit mode).
    public var inTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// Copies the whole database into `destination` with SQLite's online backup: a consistent
    /// snapshot even while this connection's file is being written through others.
    public func backup(into destination: SQLiteConnection) throws(SQLiteError) {
        guard let backup = sqlite3_backup_init(destination.handle, "main", handle, "main") else {
            throw SQLiteError.last(destination.handle, sqlite3_errcode(destination.handle), doing: "cannot start the backup")
        }
        var result: Int32
        repeat {
            result = sqlite3_backup_step(backup, -1)
            if result == SQLITE_BUSY || result == SQLITE_LOCKED { sqlite3_sleep(5) }
        } while result == SQLITE_OK || result == SQLITE_BUSY || result == SQLITE_LOCKED
        let finish = sqlite3_backup_finish(backup)
        if result != SQLITE_DONE { throw SQLiteError.last(destination.handle, result, doing: "backup") }
        if finish != SQLITE_OK { throw SQLiteError.last(destination.handle, finish, doing: "backup") }
    }

    /// The library's version, e.g. "3.40.1".
    public static var libraryVersion: String { String(cString: sqlite3_libversion()) }

    static func firstWords(_ sql: String) -> String {
        let words = sql.split(whereSeparator: { $0 == " " || $0 == "\n" }).prefix(4).joined(separator: " ")
        return words.count < sql.count ? words + "…" : words
    }
}
