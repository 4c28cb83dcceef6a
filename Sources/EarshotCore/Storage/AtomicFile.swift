#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes files so that a crash at any point leaves either the old file or the complete new one:
/// write a temporary file beside the target, fsync it, rename it over the target, fsync the folder.
public enum AtomicFile {
    /// `mode` applies to a new file; a replaced file keeps its permissions.
    /// The corresponding C functions are `open`, `write`, `fsync` and `rename`.
    public static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o644) throws(EarshotError) {
        var existing = stat()
        let permissions = stat(path, &existing) == 0 ? existing.st_mode & 0o7777 : mode
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[..<$0]) }.flatMap { $0.isEmpty ? "/" : $0 } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        let temporary = "\(directory)/.\(name).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, permissions)
        guard fd >= 0 else { throw .internalError("cannot write \(path): \(describeErrno(errno))") }
        _ = fchmod(fd, permissions)  // not narrowed by the umask
        var ok = false
        defer {
            if !ok { unlink(temporary) }
        }
        let written = bytes.withUnsafeBytes { raw -> Int32 in
            var done = 0
            while done < raw.count {
                let n = systemWrite(fd, raw.baseAddress! + done, raw.count - done)
                if n < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                done += n
            }
            return 0
        }
        if written != 0 {
            close(fd)
            throw .internalError("cannot write \(path): \(describeErrno(written))")
        }
        guard fsync(fd) == 0 else {
            let e = errno
            close(fd)
            throw .internalError("cannot flush \(path): \(describeErrno(e))")
        }
        close(fd)
        guard rename(temporary, path) == 0 else {
            throw .internalError("cannot replace \(path): \(describeErrno(errno))")
        }
        ok = true
        // Make the rename itself durable.
        let dfd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 {
            _ = fsync(dfd)
            close(dfd)
        }
    }

    /// Reads a whole file. Throws `internalError` with the path and the system's reason.
    public static func read(_ path: String) throws(EarshotError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .internalError("\(path): \(describeErrno(errno))") }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw .internalError("\(path): \(describeErrno(errno))") }
        guard (st.st_mode & S_IFMT) == S_IFREG else { throw .internalError("\(path): not a regular file") }
        var out = [UInt8](repeating: 0, count: Int(st.st_size))
        var done = 0
        while done < out.count {
            let n = out.withUnsafeMutableBytes { systemRead(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0 {
                if errno == EINTR { continue }
                throw .internalError("\(path): \(describeErrno(errno))")
            }
            if n == 0 { break }
            done += n
        }
        return Array(out[0..<done])
    }
}

// `AtomicFile.write`/`read` shadow the C functions inside the enum; these reach them on either platform.
private func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int { write(fd, buffer, count) }
private func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int { read(fd, buffer, count) }
