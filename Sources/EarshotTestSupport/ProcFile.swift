#if canImport(Glibc)
import Glibc
#endif

/// The text of a /proc file, read to its end.
///
/// /proc files report a size of 0 and hand out about a page per `read`; Foundation's
/// `String(contentsOfFile:)` stops after the first, so a long file (a process's `maps`) comes
/// back cut at about 4 KB, and which lines are missing depends on where the kernel put them.
public enum ProcFile {
    public static func text(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { return nil }
            if n == 0 { break }
            bytes.append(contentsOf: chunk[0..<n])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
