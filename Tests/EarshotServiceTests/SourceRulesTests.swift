import Foundation
import Testing

/// Rules of the code base that the compiler cannot check.
struct SourceRulesTests {
    /// Every lock is `EarshotSync.Locked`, never a bare `Synchronization.Mutex`: ThreadSanitizer
    /// cannot see a contended Mutex hand-over on Linux, so one bare Mutex brings back false race
    /// reports (see Sources/EarshotSync/Locked.swift and scripts/sanitizers/thread.supp).
    @Test func locksAreLockedNotBareMutexes() throws {
        let root = ConfigurationTests.packageRoot
        let bareMutex = try NSRegularExpression(pattern: #"(?<![A-Za-z_])Mutex\s*[<(]"#)
        var offenders: [String] = []
        for folder in ["Sources", "Tests", "benchmarks/Sources", "fuzz/Sources"] {
            let base = root.appendingPathComponent(folder)
            guard let files = FileManager.default.enumerator(at: base, includingPropertiesForKeys: nil) else { continue }
            for case let file as URL in files where file.pathExtension == "swift" {
                let path = file.path.replacingOccurrences(of: root.path + "/", with: "")
                guard path != "Sources/EarshotSync/Locked.swift" else { continue }
                let text = try String(contentsOf: file, encoding: .utf8)
                for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    let code = line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
                    if bareMutex.firstMatch(in: code, range: NSRange(code.startIndex..., in: code)) != nil {
                        offenders.append("\(path):\(number + 1)")
                    }
                }
            }
        }
        #expect(offenders.isEmpty, "use Locked instead of Mutex at \(offenders.joined(separator: ", "))")
    }
}
