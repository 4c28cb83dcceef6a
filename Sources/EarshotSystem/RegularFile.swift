#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Opening input files without ever blocking. `open` on a FIFO waits for a writer, and on some
/// devices it has side effects, so a path is first checked with `stat` (symbolic links are
/// followed: a link to a regular file is a regular file) and anything else is refused without
/// being opened. The open itself is non-blocking and checked again with `fstat`, so a path
/// swapped for a FIFO between the two steps cannot hang the caller either.
public enum RegularFile {
    /// Why a path cannot be read as a regular file; `message` is for people, without the path;
    /// `code` is the `errno` of a failed `stat` or `open`, or 0 when the path is not a regular file.
    public typealias Refusal = SystemError

    /// An open descriptor of a regular file and its size. The caller closes `descriptor`.
    public struct Opened: Sendable {
        public let descriptor: Int32
        public let size: Int
    }

    /// Opens `path` read-only (close-on-exec) if it is a regular file.
    /// The corresponding C functions are `stat`, `open` (`O_NONBLOCK`) and `fstat`.
    public static func openForReading(_ path: String) throws(Refusal) -> Opened {
        try CString.check(path, as: "path")
        var before = stat()
        guard stat(path, &before) == 0 else { throw Refusal(describeErrno(errno), code: errno) }
        if let kind = nonRegularKind(before.st_mode) { throw notRegular(kind) }
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { throw Refusal(describeErrno(errno), code: errno) }
        var after = stat()
        guard fstat(fd, &after) == 0 else {
            let code = errno
            close(fd)
            throw Refusal(describeErrno(code), code: code)
        }
        if let kind = nonRegularKind(after.st_mode) {
            close(fd)
            throw notRegular(kind)
        }
        return Opened(descriptor: fd, size: Int(after.st_size))
    }

    /// Why `path` cannot be opened as a regular file, or nil if it can (checked with `stat`
    /// only; nothing is opened).
    public static func problem(at path: String) -> Refusal? {
        do throws(SystemError) { try CString.check(path, as: "path") } catch { return error }
        var st = stat()
        guard stat(path, &st) == 0 else { return Refusal(describeErrno(errno), code: errno) }
        return nonRegularKind(st.st_mode).map(notRegular)
    }

    private static func notRegular(_ kind: String) -> Refusal {
        Refusal("is \(kind), not a regular file", code: 0)
    }

    /// What a file of `mode` is, in words, when it is not a regular file.
    private static func nonRegularKind(_ mode: mode_t) -> String? {
        switch mode & S_IFMT {
        case S_IFREG: nil
        case S_IFDIR: "a directory"
        case S_IFIFO: "a named pipe"
        case S_IFSOCK: "a socket"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        default: "an unusual kind of file"
        }
    }
}
