import EarshotCore
import EarshotCrypto
import EarshotSystem

/// Catalog uploads in progress, in their own folder (`<state>/uploads`): never visible as
/// catalogs, bounded in count and bytes, expired when left alone.
///
/// Each upload is two files: `<id>.part` (the bytes received; every acknowledged piece was
/// flushed to disk first) and `<id>.upload` (what was declared at the start: name, size,
/// SHA-256, written atomically). After a crash the held offset is the part file's length, so a
/// client resumes exactly after the last piece it saw acknowledged. Pieces carry their offset:
/// one already held is acknowledged again without being written twice (tus-style).
///
/// Not thread-safe: the daemon calls it from one queue.
public final class UploadArea {
    public struct Limits: Sendable {
        /// Largest catalog accepted.
        public var maximumBytes: Int
        /// Uploads in progress at once.
        public var maximumUploads: Int
        /// Declared bytes of every upload in progress together.
        public var maximumTotalBytes: Int
        /// An upload nobody wrote to for this long is deleted.
        public var expirySeconds: Double
        /// Free disk space an upload must leave on the state file system.
        public var reserveBytes: Int

        public init(maximumBytes: Int = 512 << 20, maximumUploads: Int = 4, maximumTotalBytes: Int = 1 << 30,
                    expirySeconds: Double = 24 * 3600, reserveBytes: Int = 64 << 20) {
            self.maximumBytes = maximumBytes
            self.maximumUploads = maximumUploads
            self.maximumTotalBytes = maximumTotalBytes
            self.expirySeconds = expirySeconds
            self.reserveBytes = reserveBytes
        }
    }

    public struct Upload: Sendable, Equatable {
        public let id: String
        /// The catalog name it installs as.
        public let name: String
        public let size: Int
        public let sha256: [UInt8]
        /// Enable the catalog when it is installed (a new name; a replacement keeps its state).
        /// The latest begin decides (a resumed upload takes the resuming caller's wish).
        public fileprivate(set) var enable: Bool
        /// Unix seconds.
        public let started: Double
        public fileprivate(set) var lastActivity: Double
        /// Bytes held: the offset the next piece starts at.
        public fileprivate(set) var held: Int
        public var isComplete: Bool { held == size }
    }

    public struct Problem: Error, Sendable, CustomStringConvertible {
        public enum Kind: Sendable { case invalidArgument, notFound, resourceExhausted, outOfRange, failedPrecondition, internalError }
        public let kind: Kind
        public let message: String
        public var description: String { message }
        init(_ kind: Kind, _ message: String) {
            self.kind = kind
            self.message = message
        }
    }

    public let directory: String
    public let limits: Limits
    private var entries: [String: Entry] = [:]
    /// What free space the area sees (replaced by tests).
    private let availableBytes: (String) -> Int?

    private final class Entry {
        var upload: Upload
        let file: PartFile
        /// SHA-256 of the bytes received so far, kept while they arrive in order; nil after a
        /// restart (the commit then reads the file once).
        var hash: SHA256?
        init(upload: Upload, file: PartFile, hash: SHA256?) {
            self.upload = upload
            self.file = file
            self.hash = hash
        }
    }

    /// Opens the area in `directory` (created if missing), taking up uploads a previous run left:
    /// those whose declaration is missing or unreadable are deleted, as are expired ones.
    public init(directory: String, limits: Limits, now: Double,
                availableBytes: @escaping (String) -> Int? = Directory.availableBytes(at:)) throws(SystemError) {
        self.directory = directory
        self.limits = limits
        self.availableBytes = availableBytes
        try Directory.create(directory, mode: 0o700)
        AtomicFile.removeStaleTemporaries(in: directory)
        let names = try Directory.names(in: directory)
        for name in names where name.hasSuffix(".upload") {
            let id = String(name.dropLast(".upload".count))
            guard Self.isValidID(id), let upload = Self.readDeclaration(path(id, "upload"), id: id),
                  let file = try? PartFile(path: path(id, "part"))
            else {
                discard(id)
                continue
            }
            var resumed = upload
            // Bytes past the declared size cannot be part of it.
            if file.size > upload.size { try? file.truncate(to: upload.size) }
            resumed.held = min(file.size, upload.size)
            resumed.lastActivity = now
            entries[id] = Entry(upload: resumed, file: file, hash: resumed.held == 0 ? SHA256() : nil)
        }
        // Part files without a declaration: a crash between the two writes of a begin.
        for name in names where name.hasSuffix(".part") {
            let id = String(name.dropLast(".part".count))
            if entries[id] == nil { discard(id) }
        }
        _ = expire(now: now)
    }

    /// Uploads in progress, oldest first.
    public var uploads: [Upload] { entries.values.map(\.upload).sorted { ($0.started, $0.id) < ($1.started, $1.id) } }

    /// Starts an upload, or resumes the one in progress with the same name, size and digest
    /// (a client that lost its upload id, or was killed, starts again and goes on where it was).
    public func begin(name: String, size: Int, sha256: [UInt8], enable: Bool, now: Double) throws(Problem) -> (upload: Upload, resumed: Bool) {
        if let problem = CatalogName.problem(name) { throw Problem(.invalidArgument, problem) }
        guard sha256.count == SHA256.byteCount else {
            throw Problem(.invalidArgument, "sha256 must be the 32-byte SHA-256 of the catalog file")
        }
        if let existing = entries.values.first(where: { $0.upload.name == name && $0.upload.size == size && $0.upload.sha256 == sha256 }) {
            existing.upload.lastActivity = now
            if existing.upload.enable != enable {
                existing.upload.enable = enable
                // Best effort: after a restart before the commit, the first wish would stand.
                try? AtomicFile.write(Array(Self.declaration(existing.upload).utf8), to: path(existing.upload.id, "upload"), mode: 0o600)
            }
            return (existing.upload, true)
        }
        guard size > 0 else { throw Problem(.invalidArgument, "size must be the catalog file's length in bytes (> 0)") }
        guard size <= limits.maximumBytes else {
            throw Problem(.resourceExhausted, "the catalog is \(Self.megabytes(size)); this box accepts catalogs up to \(Self.megabytes(limits.maximumBytes)) (catalogs.max_upload_bytes)")
        }
        guard entries.count < limits.maximumUploads else {
            throw Problem(.resourceExhausted, "\(entries.count) uploads are in progress, the most this box allows (catalogs.max_uploads): commit or abort one, or wait for it to expire")
        }
        let pending = entries.values.reduce(0) { $0 + $1.upload.size }
        guard pending + size <= limits.maximumTotalBytes else {
            throw Problem(.resourceExhausted, "uploads in progress already hold \(Self.megabytes(pending)); with this one they would pass \(Self.megabytes(limits.maximumTotalBytes)) (catalogs.max_upload_total_bytes)")
        }
        let owed = entries.values.reduce(size) { $0 + $1.upload.size - $1.upload.held }
        if let free = availableBytes(directory), free - owed < limits.reserveBytes {
            throw Problem(.resourceExhausted, "not enough disk space: \(Self.megabytes(free)) free, the upload needs \(Self.megabytes(owed)) and \(Self.megabytes(limits.reserveBytes)) must stay free (catalogs.reserve_bytes)")
        }
        var id = Self.newID()
        while entries[id] != nil { id = Self.newID() }
        let upload = Upload(id: id, name: name, size: size, sha256: sha256, enable: enable, started: now, lastActivity: now, held: 0)
        do {
            // The declaration first: a part file without one is removed at the next start.
            try AtomicFile.write(Array(Self.declaration(upload).utf8), to: path(id, "upload"), mode: 0o600)
            let file = try PartFile(path: path(id, "part"))
            try file.truncate(to: 0)
            entries[id] = Entry(upload: upload, file: file, hash: SHA256())
        } catch {
            discard(id)
            throw Problem(Self.isDiskFull(error) ? .resourceExhausted : .internalError, "cannot start the upload: \(error.message)")
        }
        return (upload, false)
    }

    /// Writes a piece at `offset`. A piece wholly held already is acknowledged without a write;
    /// one that overlaps the end of what is held writes only its new bytes. A piece that would
    /// leave a hole, or pass the declared size, is refused with the offset to send from.
    public func write(id: String, offset: Int, bytes: UnsafeRawBufferPointer, now: Double) throws(Problem) -> Upload {
        let entry = try lookup(id)
        let held = entry.upload.held
        guard offset >= 0, offset <= held else {
            throw Problem(.outOfRange, "piece at offset \(offset), but \(held) bytes are held: send from offset \(held)")
        }
        guard offset + bytes.count <= entry.upload.size else {
            throw Problem(.outOfRange, "piece of \(bytes.count) bytes at offset \(offset) passes the declared size \(entry.upload.size)")
        }
        entry.upload.lastActivity = now
        let end = offset + bytes.count
        guard end > held else { return entry.upload }  // held already: acknowledged again
        let fresh = UnsafeRawBufferPointer(rebasing: bytes[(held - offset)...])
        do { try entry.file.write(fresh, at: held) } catch {
            // What the failed write left past `held` is not acknowledged: cut it off.
            try? entry.file.truncate(to: held)
            throw Problem(Self.isDiskFull(error) ? .resourceExhausted : .internalError, "cannot store the piece: \(error.message)")
        }
        entry.hash?.update(fresh)
        entry.upload.held = end
        return entry.upload
    }

    public func upload(id: String) throws(Problem) -> Upload { try lookup(id).upload }

    /// A whole upload ready to verify: its part file's path and, when the bytes arrived in one
    /// run, their SHA-256 (otherwise the verifier reads the file).
    public func completed(id: String) throws(Problem) -> (upload: Upload, path: String, sha256: [UInt8]?) {
        let entry = try lookup(id)
        guard entry.upload.isComplete else {
            throw Problem(.failedPrecondition, "the upload holds \(entry.upload.held) of \(entry.upload.size) bytes: send the rest from offset \(entry.upload.held) before committing")
        }
        // Durable before it is renamed into place: a crash after the rename must find it whole.
        do { try entry.file.sync() } catch { throw Problem(.internalError, "cannot flush the upload: \(error.message)") }
        return (entry.upload, path(id, "part"), entry.hash?.finish())
    }

    /// Forgets an upload whose part file was moved away (installed), deleting its declaration.
    public func installed(id: String) {
        entries[id] = nil
        try? Directory.remove(path(id, "upload"))
    }

    /// Deletes an upload and its bytes.
    public func abort(id: String) throws(Problem) {
        _ = try lookup(id)
        entries[id] = nil
        discard(id)
    }

    /// Deletes uploads nobody wrote to for longer than the limit; returns them.
    public func expire(now: Double) -> [Upload] {
        let old = entries.values.map(\.upload).filter { now - $0.lastActivity > limits.expirySeconds }
        for u in old {
            entries[u.id] = nil
            discard(u.id)
        }
        return old
    }

    // MARK: Files

    private func lookup(_ id: String) throws(Problem) -> Entry {
        guard let entry = entries[id] else {
            throw Problem(.notFound, "no upload \(id) in progress (committed, aborted or expired): begin again to start over")
        }
        return entry
    }

    private func path(_ id: String, _ kind: String) -> String { "\(directory)/\(id).\(kind)" }

    private func discard(_ id: String) {
        try? Directory.remove(path(id, "part"))
        try? Directory.remove(path(id, "upload"))
    }

    private static func newID() -> String {
        SHA256.hex((0..<8).map { _ in UInt8.random(in: 0...255) })
    }

    static func isValidID(_ id: String) -> Bool {
        id.count == 16 && id.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    private static func isDiskFull(_ error: SystemError) -> Bool { error.code == 28 || error.code == 122 }  // ENOSPC, EDQUOT

    static func megabytes(_ bytes: Int) -> String {
        bytes >= 1 << 20 ? "\((Double(bytes) / 1048576).decimalText(places: 1)) MiB" : "\(bytes) bytes"
    }

    // MARK: Declaration file

    static func declaration(_ u: Upload) -> String {
        JSONValue.object([
            "name": .string(u.name), "size": .number(Double(u.size)), "sha256": .string(SHA256.hex(u.sha256)),
            "enable": .bool(u.enable), "started": .number(u.started),
        ]).jsonText
    }

    static func readDeclaration(_ path: String, id: String) -> Upload? {
        guard let bytes = try? AtomicFile.read(path), let json = JSONValue(jsonText: String(decoding: bytes, as: UTF8.self)),
              case .object(let o) = json, case .string(let name)? = o["name"], case .number(let size)? = o["size"],
              case .string(let hex)? = o["sha256"], let digest = SHA256.digest(hex: hex), case .number(let started)? = o["started"],
              CatalogName.problem(name) == nil, let declared = Int(exactly: size), declared > 0, declared <= 1 << 50
        else { return nil }
        var enable = false
        if case .bool(let e)? = o["enable"] { enable = e }
        // Activity restarts with the daemon: an upload is not expired by the daemon's own downtime.
        return Upload(id: id, name: name, size: declared, sha256: digest, enable: enable, started: started,
                      lastActivity: started, held: 0)
    }
}

/// Catalog names: what goes before ".earcat" in the catalogs folder.
public enum CatalogName {
    /// Why `name` cannot name a catalog, or nil when it can: 1–64 letters, digits, '.', '_' or
    /// '-', not starting with '.' or '-' (no hidden files, no options, no paths).
    public static func problem(_ name: String) -> String? {
        let ok = !name.isEmpty && name.utf8.count <= 64 && name.utf8.allSatisfy {
            (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) || $0 == 46 || $0 == 95 || $0 == 45
        } && !name.hasPrefix(".") && !name.hasPrefix("-")
        return ok ? nil : "\"\(name.escapingControlCharacters)\" cannot name a catalog: use 1–64 letters, digits, '.', '_' or '-', not starting with '.' or '-'"
    }

    /// The catalog file name of `name`.
    public static func fileName(_ name: String) -> String { name + ".earcat" }

    /// The catalog name a file in the catalogs folder stands for, or nil for files that are not
    /// catalogs (hidden or temporary files, other extensions, names a catalog cannot have).
    public static func name(ofFile file: String) -> String? {
        guard file.hasSuffix(".earcat") else { return nil }
        let name = String(file.dropLast(".earcat".count))
        return problem(name) == nil ? name : nil
    }
}
