#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes files so that a crash at any point leaves either the old file or the complete new one:
/// write a temporary file beside the target, fsync it, rename it over the target, fsync the folder.
public enum AtomicFile {
    /// `mode` applies to a new file; a replaced file keeps its permissions unless `forceMode`
    /// (a secret key must never inherit a looser mode from the file it replaces).
    /// The corresponding C functions are `open`, `write`, `fsync` and `rename`.
    public static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o644, forceMode: Bool = false) throws(SystemError) {
        try CString.check(path, as: "path")
        var existing = stat()
        let permissions = !forceMode && stat(path, &existing) == 0 ? existing.st_mode & 0o7777 : mode
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[..<$0]) }.flatMap { $0.isEmpty ? "/" : $0 } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        let temporary = "\(directory)/.\(name)\(temporaryMarker)\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, permissions)
        guard fd >= 0 else { throw .errno("cannot write \(path)", errno) }
        _ = fchmod(fd, permissions)  // not narrowed by the umask
        var ok = false
        defer {
            if !ok { unlink(temporary) }
        }
        let written = bytes.withUnsafeBytes { Descriptor.writeAll(fd, $0) }
        if written != 0 {
            close(fd)
            throw .errno("cannot write \(path)", written)
        }
        guard fsync(fd) == 0 else {
            let e = errno
            close(fd)
            throw .errno("cannot flush \(path)", e)
        }
        close(fd)
        // Renamed over the target, and the rename itself made durable.
        do { try Directory.rename(temporary, to: path) } catch { throw .errno("cannot replace \(path)", error.code) }
        ok = true
    }

    /// What sits between a target's name and the writer's pid in a temporary file's name.
    static let temporaryMarker = ".tmp-"

    /// Removes temporary files left in `directory` by writers that were killed before their
    /// rename (`.<name>.tmp-<pid>-<n>` whose pid is gone); returns their names. A live writer's
    /// file is left alone.
    @discardableResult
    public static func removeStaleTemporaries(in directory: String) -> [String] {
        var removed: [String] = []
        for name in (try? Directory.names(in: directory)) ?? [] {
            guard name.hasPrefix("."), let marker = name.ranges(of: temporaryMarker).last else { continue }
            let rest = name[marker.upperBound...].split(separator: "-")
            guard rest.count == 2, let pid = pid_t(rest[0]), UInt32(rest[1]) != nil, pid > 0 else { continue }
            if kill(pid, 0) == 0 || errno == EPERM { continue }  // its writer is still running
            if unlink("\(directory)/\(name)") == 0 { removed.append(name) }
        }
        return removed
    }

    /// Reads a whole regular file (anything else is refused without blocking, see `RegularFile`).
    /// The error's message starts with the path.
    public static func read(_ path: String) throws(SystemError) -> [UInt8] {
        let file: RegularFile.Opened
        do { file = try RegularFile.openForReading(path) } catch { throw SystemError("\(path): \(error.message)", code: error.code) }
        defer { close(file.descriptor) }
        var out = [UInt8](repeating: 0, count: file.size)
        let n = out.withUnsafeMutableBytes { Descriptor.readAll(file.descriptor, into: $0) }
        if n < 0 { throw .errno(path, Int32(-n)) }
        return Array(out[0..<n])
    }
}
