import EarshotTestSupport
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Values of /proc/self/status (kB), e.g. VmRSS, VmHWM, RssAnon, RssFile.
enum ProcStatus {
    /// The whole text of a /proc file (see `ProcFile`).
    static func read(_ path: String) -> String? { ProcFile.text(path) }

    static func kilobytes(_ field: String, pid: Int32? = nil) -> Int? {
        guard let text = read(pid.map { "/proc/\($0)/status" } ?? "/proc/self/status") else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
            let digits = line.dropFirst(field.count + 1).filter { $0.isNumber }
            return Int(digits)
        }
        return nil
    }

    static func megabytes(_ field: String, pid: Int32? = nil) -> Double? { kilobytes(field, pid: pid).map { Double($0) / 1024 } }

    /// Resident kB of this process's mappings of the file at `path` (/proc/self/smaps).
    static func mappedKilobytes(of path: String) -> Int? {
        guard let resolved = realpath(path, nil) else { return nil }
        let target = String(cString: resolved)
        free(resolved)
        guard let text = read("/proc/self/smaps") else { return nil }
        var inside = false, total = 0
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let first = fields.first else { continue }
            if first.contains("-"), first.allSatisfy({ $0.isHexDigit || $0 == "-" }) {
                inside = fields.count >= 6 && fields[5...].joined(separator: " ") == target
            } else if inside, first == "Rss:", fields.count >= 2, let kb = Int(fields[1]) {
                total += kb
            }
        }
        return total
    }
}
