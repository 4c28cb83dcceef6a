#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file being received piece by piece (an upload): written at explicit offsets and made
/// durable before a piece is acknowledged, so what was acknowledged survives a crash.
/// The corresponding C functions are `open`, `pwrite`, `fdatasync`, `fsync`, `ftruncate` and `fstat`.
public final class PartFile: @unchecked Sendable {
    public let path: String
    private let descriptor: Int32

    /// Opens (creating if needed, mode 0600) the file at `path` for reading and writing.
    public init(path: String) throws(SystemError) {
        try CString.check(path, as: "path")
        let fd = retryingOnInterrupt { open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600) }
        guard fd >= 0 else { throw .errno("cannot open \(path)", errno) }
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw SystemError("\(path): not a regular file", code: EINVAL)
        }
        self.path = path
        descriptor = fd
    }

    deinit { close(descriptor) }

    /// Bytes in the file now.
    public var size: Int {
        var status = stat()
        return fstat(descriptor, &status) == 0 ? Int(status.st_size) : 0
    }

    /// Writes `bytes` at `offset` and flushes them to the disk before returning.
    public func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(SystemError) {
        var done = 0
        while done < bytes.count {
            let n = retryingOnInterrupt { pwrite(descriptor, bytes.baseAddress! + done, bytes.count - done, off_t(offset + done)) }
            guard n > 0 else { throw .errno("cannot write \(path)", n == 0 ? EIO : errno) }
            done += n
        }
        guard retryingOnInterrupt({ fdatasync(descriptor) }) == 0 else { throw .errno("cannot flush \(path)", errno) }
    }

    /// Cuts the file to `length` bytes (what a crash may have left beyond the last acknowledged
    /// piece is not trusted).
    public func truncate(to length: Int) throws(SystemError) {
        guard retryingOnInterrupt({ ftruncate(descriptor, off_t(length)) }) == 0 else {
            throw .errno("cannot truncate \(path)", errno)
        }
    }

    /// Flushes data and metadata (before the file is renamed into place).
    public func sync() throws(SystemError) {
        guard retryingOnInterrupt({ fsync(descriptor) }) == 0 else { throw .errno("cannot flush \(path)", errno) }
    }
}

/// Operations on folders and the file system they live on.
public enum Directory {
    /// Bytes an unprivileged process may still write on the file system holding `path`.
    public static func availableBytes(at path: String) -> Int? {
        guard CString.isSafe(path) else { return nil }
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        return Int(info.f_bavail) &* Int(info.f_frsize)
    }

    /// Renames `from` to `to` (same file system: atomic, replacing `to`), then makes the rename
    /// durable by flushing the folder of `to`.
    public static func rename(_ from: String, to: String) throws(SystemError) {
        try CString.check(from, as: "path")
        try CString.check(to, as: "path")
        guard systemRename(from, to) == 0 else { throw .errno("cannot rename \(from) to \(to)", errno) }
        sync(folderOf: to)
    }

    /// Deletes `path` and flushes its folder; a missing file is not an error.
    public static func remove(_ path: String) throws(SystemError) {
        try CString.check(path, as: "path")
        guard unlink(path) == 0 || errno == ENOENT else { throw .errno("cannot remove \(path)", errno) }
        sync(folderOf: path)
    }

    /// Creates `path` (and missing parents) with `mode`; an existing folder is fine.
    public static func create(_ path: String, mode: mode_t = 0o755) throws(SystemError) {
        try CString.check(path, as: "path")
        var prefix = path.hasPrefix("/") ? "" : "."
        for part in path.split(separator: "/") {
            prefix += "/" + part
            if mkdir(prefix, mode) != 0 && errno != EEXIST { throw .errno("cannot create the folder \(prefix)", errno) }
        }
        var status = stat()
        guard stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFDIR else {
            throw SystemError("\(path): not a folder", code: ENOTDIR)
        }
    }

    /// Names in `path` (not "." or ".."), unsorted.
    public static func names(in path: String) throws(SystemError) -> [String] {
        try CString.check(path, as: "path")
        guard let dir = opendir(path) else { throw .errno("cannot list \(path)", errno) }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Changes a file's permission bits (best effort: false when not allowed).
    @discardableResult
    public static func setMode(_ path: String, _ mode: mode_t) -> Bool {
        CString.isSafe(path) && chmod(path, mode) == 0
    }

    private static func systemRename(_ from: String, _ to: String) -> Int32 {
        #if canImport(Glibc)
        Glibc.rename(from, to)
        #else
        Darwin.rename(from, to)
        #endif
    }

    private static func sync(folderOf path: String) {
        let slash = path.lastIndex(of: "/")
        let folder = slash.map { String(path[..<$0]) }.flatMap { $0.isEmpty ? "/" : $0 } ?? "."
        let fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 {
            _ = fsync(fd)
            close(fd)
        }
    }
}
