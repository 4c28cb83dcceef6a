import CSQLite

/// A prepared statement: bind, step through rows, read columns.
public final class SQLiteStatement: @unchecked Sendable {
    let handle: OpaquePointer
    private unowned let connection: SQLiteConnection

    init(_ handle: OpaquePointer, connection: SQLiteConnection) {
        self.handle = handle
        self.connection = connection
    }

    deinit { sqlite3_finalize(handle) }

    /// SQLite copies bound text and blobs (SQLITE_TRANSIENT).
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    /// Resets the statement and binds `values` to its parameters, in order.
    public func reset(binding values: [SQLiteValue]) throws(SQLiteError) {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        for (i, value) in values.enumerated() {
            let index = Int32(i + 1)
            let result: Int32
            switch value {
            case .null: result = sqlite3_bind_null(handle, index)
            case .integer(let v): result = sqlite3_bind_int64(handle, index, v)
            case .real(let v): result = sqlite3_bind_double(handle, index, v)
            case .text(let v): result = Self.bind(v, at: index, of: handle)
            case .blob(let v):
                result = v.withUnsafeBytes { sqlite3_bind_blob64(handle, index, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), UInt64($0.count), Self.transient) }
            }
            guard result == SQLITE_OK else { throw SQLiteError.last(connection.handle, result, doing: "cannot bind parameter \(index)") }
        }
    }

    /// Binds text with its byte length, never as a C string: a NUL inside is part of the value, so
    /// "viewer\0x" stays another value than "viewer".
    private static func bind(_ text: String, at index: Int32, of handle: OpaquePointer) -> Int32 {
        var text = text
        return text.withUTF8 { bytes in
            // An empty value still needs a pointer: a null one would bind NULL, not "".
            let start = UnsafeRawPointer(bytes.baseAddress ?? ("" as StaticString).utf8Start).assumingMemoryBound(to: CChar.self)
            return sqlite3_bind_text64(handle, index, start, UInt64(bytes.count), transient, UInt8(SQLITE_UTF8))
        }
    }

    /// Steps to the next row: true with a row to read, false when done.
    public func step() throws(SQLiteError) -> Bool {
        let result = sqlite3_step(handle)
        switch result {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let error = SQLiteError.last(connection.handle, result, doing: SQLiteConnection.firstWords(String(cString: sqlite3_sql(handle))))
            sqlite3_reset(handle)
            throw error
        }
    }

    /// Ends the current run, releasing its read lock; the statement stays prepared.
    public func release() {
        sqlite3_reset(handle)
    }

    public func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }
    public func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }
    public func double(_ column: Int32) -> Double { sqlite3_column_double(handle, column) }

    public func text(_ column: Int32) -> String {
        guard let p = sqlite3_column_text(handle, column) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: p, count: count), as: UTF8.self)
    }

    public func blob(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let p = sqlite3_column_blob(handle, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: p, count: count))
    }

    public func value(_ column: Int32) -> SQLiteValue {
        switch sqlite3_column_type(handle, column) {
        case SQLITE_INTEGER: return .integer(int64(column))
        case SQLITE_FLOAT: return .real(double(column))
        case SQLITE_TEXT: return .text(text(column))
        case SQLITE_BLOB: return .blob(blob(column))
        default: return .null
        }
    }
}
