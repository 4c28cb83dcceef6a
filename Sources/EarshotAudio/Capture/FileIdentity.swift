#if canImport(Glibc)
    import Glibc
#endif

/// Which version of a file a path names: its device and inode, size and modification time.
///
/// An open file keeps reading its inode whatever happens to the path, so a reader that must
/// follow the path (a file played as if it were a TV) compares this with what it opened: a
/// file deleted, replaced by another (a new inode), truncated or rewritten in place (a new size
/// or modification time) no longer matches. Reading a file does not change it.
struct FileIdentity: Equatable, Sendable {
    let device: UInt64
    let inode: UInt64
    let size: Int64
    let modifiedSeconds: Int
    let modifiedNanoseconds: Int

    /// What `path` names now; nil when it names nothing (or cannot be examined).
    init?(path: String) {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        device = UInt64(status.st_dev)
        inode = UInt64(status.st_ino)
        size = Int64(status.st_size)
        modifiedSeconds = status.st_mtim.tv_sec
        modifiedNanoseconds = status.st_mtim.tv_nsec
    }
}
