#if canImport(Glibc)
import Glibc

/// Tells what happens to the files of one folder (Linux inotify): a file finished by its writer
/// (closed after writing, or renamed into the folder) or gone (deleted, or renamed away).
/// Files still being written are never reported, so a copy in progress is never picked up.
/// The corresponding C functions are `inotify_init1`, `inotify_add_watch`, `poll` and `read`.
public final class DirectoryWatcher: @unchecked Sendable {
    public enum Change: Equatable, Sendable {
        /// A writer closed the file, or it was renamed into the folder.
        case finished(String)
        /// The file was deleted or renamed away.
        case removed(String)
        /// Events were lost (the kernel's queue overflowed): look at the whole folder again.
        case overflow
    }

    public let path: String
    private let descriptor: Int32

    public init(path: String) throws(SystemError) {
        try CString.check(path, as: "path")
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { throw .errno("cannot watch \(path) (inotify)", errno) }
        let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM)
        guard inotify_add_watch(fd, path, mask) >= 0 else {
            let e = errno
            close(fd)
            throw .errno("cannot watch \(path) (inotify)", e)
        }
        self.path = path
        descriptor = fd
    }

    deinit { close(descriptor) }

    /// The changes that happened, waiting up to `timeoutMilliseconds` for the first ones;
    /// empty when nothing happened in that time.
    public func changes(timeoutMilliseconds: Int32) -> [Change] {
        var fds = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard retryingOnInterrupt({ poll(&fds, 1, timeoutMilliseconds) }) > 0 else { return [] }
        var changes: [Change] = []
        let bufferSize = 64 * 1024
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 8)
        defer { buffer.deallocate() }
        while true {
            let n = read(descriptor, buffer.baseAddress!, bufferSize)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            var offset = 0
            let header = MemoryLayout<inotify_event>.size
            while offset + header <= n {
                let event = buffer.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                let nameBytes = UnsafeRawBufferPointer(rebasing: buffer[(offset + header)..<min(n, offset + header + Int(event.len))])
                let name = String(decoding: nameBytes.prefix(while: { $0 != 0 }), as: UTF8.self)
                if event.mask & UInt32(IN_Q_OVERFLOW) != 0 {
                    changes.append(.overflow)
                } else if event.mask & UInt32(IN_CLOSE_WRITE | IN_MOVED_TO) != 0, !name.isEmpty {
                    changes.append(.finished(name))
                } else if event.mask & UInt32(IN_DELETE | IN_MOVED_FROM) != 0, !name.isEmpty {
                    changes.append(.removed(name))
                }
                offset += header + Int(event.len)
            }
        }
        return changes
    }
}
#endif
