import Foundation
import EarshotCore

/// Checks on input files made before any work, so a typo fails fast with a clear message.
enum InputFile {
    /// Throws a bad-input failure unless `path` is an existing regular file.
    static func requireFile(_ path: String) throws(CLIFailure) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw .badInput(path, "no such file")
        }
        guard !isDirectory.boolValue else { throw .badInput(path, "is a directory, not a file") }
        guard FileManager.default.isReadableFile(atPath: path) else { throw .badInput(path, "permission denied") }
    }

    /// The first `count` bytes of the file (fewer if it is shorter; empty if unreadable).
    static func prefix(of path: String, count: Int) -> [UInt8] {
        guard let handle = FileHandle(forReadingAtPath: path) else { return [] }
        defer { try? handle.close() }
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
