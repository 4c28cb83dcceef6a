import CSQLite
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed SQLite call: its result code, the extended code, and SQLite's message with what was
/// being done.
public struct SQLiteError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The primary result code (`SQLITE_CORRUPT`, `SQLITE_FULL`…).
    public let code: Int32
    /// The extended result code (`SQLITE_IOERR_WRITE`…), or `code` when there is none.
    public let extendedCode: Int32
    public let message: String

    public init(code: Int32, extendedCode: Int32? = nil, message: String) {
        self.code = code & 0xff
        self.extendedCode = extendedCode ?? code
        self.message = message
    }

    /// The file is damaged, or is not an SQLite database at all.
    public var isCorrupt: Bool { code == SQLITE_CORRUPT || code == SQLITE_NOTADB }
    /// A constraint refused the row (CHECK, UNIQUE, NOT NULL, FOREIGN KEY).
    public var isConstraint: Bool { code == SQLITE_CONSTRAINT }
    /// The disk, or the database's size limit, is full.
    public var isFull: Bool { code == SQLITE_FULL }
    /// Another connection holds a lock the call needed.
    public var isBusy: Bool { code == SQLITE_BUSY || code == SQLITE_LOCKED }
    /// A write was refused: read-only file, folder or connection.
    public var isReadOnly: Bool { code == SQLITE_READONLY }
    /// The file could not be opened or created.
    public var cannotOpen: Bool { code == SQLITE_CANTOPEN || code == SQLITE_PERM || code == SQLITE_AUTH }
    /// A read or write of the file failed below SQLite (disk error, file gone).
    public var isIOError: Bool { code == SQLITE_IOERR }

    public var description: String { message }

    /// The error `connection` reports after a call returned `result`.
    static func last(_ connection: OpaquePointer?, _ result: Int32, doing what: String) -> SQLiteError {
        var text = connection.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(result))
        let extended = connection.map { sqlite3_extended_errcode($0) } ?? result
        // "disk I/O error" says nothing of why: the system's errno does. (Not for SQLITE_CANTOPEN:
        // its errno is that of SQLite's last probe, often ENOENT where the cause is permission.)
        if let connection, case let errno = sqlite3_system_errno(connection), errno != 0,
           result & 0xff == SQLITE_IOERR || result & 0xff == SQLITE_READONLY {
            text += " (\(String(cString: strerror(errno))))"
        }
        return SQLiteError(code: result, extendedCode: extended, message: "\(what): \(text)")
    }
}
