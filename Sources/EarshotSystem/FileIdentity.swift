#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Which version of a file a path names: its device and inode, size and modification time.
///
/// An open file keeps reading its inode whatever happens to the path, so a reader that must
/// follow the path (a file played as if it were a TV, an allow-list re-read when it changes)
/// compares this with what it saw before: a file deleted, replaced by another (a new inode),
/// truncated or rewritten in place (a new size or modification time) no longer matches.
public struct FileIdentity: Equatable, Sendable {
    public let device: UInt64
    public let inode: UInt64
    public let size: Int64
    public let modifiedSeconds: Int
    public let modifiedNanoseconds: Int

    /// What `path` names now; nil when it names nothing (or cannot be examined).
    public init?(path: String) {
        guard CString.isSafe(path) else { return nil }
        self.init(cPath: path)
    }

    /// The same for a path already in C form: a reader that checks its path several times a
    /// second keeps it so, as passing a `String` to `stat` makes a C copy (an allocation) each time.
    public init?(cPath: UnsafePointer<CChar>) {
        var status = stat()
        guard stat(cPath, &status) == 0 else { return nil }
        device = UInt64(status.st_dev)
        inode = UInt64(status.st_ino)
        size = Int64(status.st_size)
        #if canImport(Darwin)
        modifiedSeconds = status.st_mtimespec.tv_sec
        modifiedNanoseconds = status.st_mtimespec.tv_nsec
        #else
        modifiedSeconds = status.st_mtim.tv_sec
        modifiedNanoseconds = status.st_mtim.tv_nsec
        #endif
    }
}
