import EarshotCore
import EarshotSystem
import Foundation

/// Checks on input files made before any work, so a typo fails fast with a clear message.
enum InputFile {
    /// Throws a bad-input failure unless `path` is an existing, readable regular file (or a
    /// symbolic link to one). A FIFO, socket or device is refused without being opened: reading
    /// one would wait for a writer or consume what it holds.
    static func requireFile(_ path: String) throws(CLIFailure) {
        if let refusal = RegularFile.problem(at: path) {
            switch refusal.code {
            case ENOENT, ENOTDIR: throw .badInput(path, "no such file")
            case EACCES: throw .badInput(path, "permission denied")
            default: throw .badInput(path, refusal.message)
            }
        }
        guard FileManager.default.isReadableFile(atPath: path) else { throw .badInput(path, "permission denied") }
    }

    /// The first `count` bytes of the file (fewer if it is shorter; empty if unreadable or not
    /// a regular file).
    static func prefix(of path: String, count: Int) -> [UInt8] {
        guard let file = try? RegularFile.openForReading(path) else { return [] }
        let handle = FileHandle(fileDescriptor: file.descriptor, closeOnDealloc: true)
        return (try? handle.read(upToCount: count)).map { [UInt8]($0) } ?? []
    }

    /// Refuses an empty file, or one that does not start with `magic` (a short file must be a
    /// prefix of it). The core would call a short foreign file "truncated"; this names it foreign.
    static func requireMagic(_ magic: String, of path: String, kind: String) throws(CLIFailure) {
        let expected = Array(magic.utf8)
        let head = prefix(of: path, count: expected.count)
        guard !head.isEmpty else { throw .badInput(path, "the file is empty, not \(kind)") }
        guard expected.starts(with: head) else { throw .badInput(path, "not \(kind) (bad magic number)") }
    }

    /// The whole file, as bad input if it cannot be read.
    static func read(_ path: String) throws(CLIFailure) -> [UInt8] {
        try requireFile(path)
        do { return try AtomicFile.read(path) } catch { throw .badInput(path, error) }
    }
}
