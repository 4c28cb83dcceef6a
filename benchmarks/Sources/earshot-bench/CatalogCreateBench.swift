import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// `earshot catalog create` over the corpus's own audio files, as an author runs it: the release
/// CLI as a child process, decoding and fingerprinting on every core (target: at least 1300×
/// real time on a 2-core machine). Two runs; the slower one is the verdict.
struct CatalogCreateStats {
    struct Run {
        var wallSeconds: Double
        /// User + system CPU of the child.
        var cpuSeconds: Double
    }

    var files: Int
    /// "30 .opus, 1 .wav": what the files are.
    var kinds = ""
    var audioSeconds: Double
    var catalogBytes: Int
    var runs: [Run]
    /// Why the CLI failed, if it did (the other benchmarks still run).
    var failure: String?

    var slowestRealTimeFactor: Double { audioSeconds / (runs.map(\.wallSeconds).max() ?? .infinity) }
    func realTimeFactor(_ run: Run) -> Double { audioSeconds / run.wallSeconds }
}

enum CatalogCreateBench {
    static let target = 1300.0

    /// Nil when the corpus has no files on disk (synthetic music).
    static func run(corpus: Corpus, workDirectory: String, runs: Int = 2) throws -> CatalogCreateStats? {
        let files = corpus.files.filter { $0.path != nil }
        guard !files.isEmpty else { return nil }
        let earshot = (Machine.executablePath() as NSString).deletingLastPathComponent + "/earshot"
        guard FileManager.default.isExecutableFile(atPath: earshot) else {
            throw BenchError("\(earshot) missing: build it with `swift build -c release --product earshot` (benchmarks/run.sh does)")
        }
        let output = "\(workDirectory)/created.earcat"
        var measured: [CatalogCreateStats.Run] = []
        for _ in 0..<runs {
            try? FileManager.default.removeItem(atPath: output)
            let cpu0 = childrenCPUSeconds(), t0 = Clock.now()
            let r = try Shell.run(earshot, ["catalog", "create", "-o", output, "--quiet"] + files.map { $0.path! })
            let wall = Clock.now() - t0
            guard r.status == 0 else {
                say("catalog create failed: \(r.error)")
                return CatalogCreateStats(files: files.count, audioSeconds: 0, catalogBytes: 0, runs: [],
                                          failure: r.error.split(separator: "\n").first.map(String.init) ?? "exit \(r.status)")
            }
            measured.append(.init(wallSeconds: wall, cpuSeconds: childrenCPUSeconds() - cpu0))
        }
        let bytes = (try? FileManager.default.attributesOfItem(atPath: output)[.size] as? Int) ?? 0
        var byExtension: [String: Int] = [:]
        for f in files { byExtension["." + (f.path! as NSString).pathExtension.lowercased(), default: 0] += 1 }
        let kinds = byExtension.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.map { "\($0.value) \($0.key)" }
            .joined(separator: ", ")
        let stats = CatalogCreateStats(files: files.count, kinds: kinds, audioSeconds: files.reduce(0) { $0 + $1.duration }, catalogBytes: bytes,
                                       runs: measured)
        say("catalog create: " + stats.runs.map { String(format: "%.2f s wall, %.2f s CPU (%.0f× real time)", $0.wallSeconds, $0.cpuSeconds, stats.realTimeFactor($0)) }
            .joined(separator: "; "))
        return stats
    }

    /// User + system CPU seconds of the children waited for so far.
    private static func childrenCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_CHILDREN.rawValue, &usage)
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// The report's row.
    static func row(_ s: CatalogCreateStats, cores: Int) -> String {
        if let failure = s.failure {
            return "| `earshot catalog create` (release CLI, the corpus's \(s.files) files) | failed: \(failure) | ≥ \(Int(target))× real time | **FAIL** |\n"
        }
        let runs = s.runs.map { String(format: "%.2f s (%.0f×, %.0f%% of one core)", $0.wallSeconds, s.realTimeFactor($0), 100 * $0.cpuSeconds / $0.wallSeconds) }
            .joined(separator: "; ")
        return String(format: "| `earshot catalog create` (release CLI, a child process; the corpus's %d files as they ship (%@), in the page cache, %.2f h, %@; %d cores), two runs | %@ | ≥ %.0f× real time | %@ |\n",
                      s.files, s.kinds, s.audioSeconds / 3600, Fmt.bytes(s.catalogBytes), cores, runs, target, Fmt.passFail(s.slowestRealTimeFactor >= target))
    }
}
