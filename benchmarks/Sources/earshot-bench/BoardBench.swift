import EarshotCore
import EarshotCrypto
import EarshotSync
import EarshotSystem
import EarshotTestSupport
import EarshotTransport
import EarshotWire
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The board benchmark: the real `earshotd` (CURVE and follow on, as shipped) inside cgroup v1
/// limits the size of a Raspberry Pi's CPU: a share of one core from the ratio of sysbench's
/// published single-core score of the board to this machine's (measured at run time with the same
/// command), pinned to one CPU, 256 MB of memory. At a Pi 3 / Zero 2 W and a Pi 4 budget: CPU,
/// dropped audio, prepared Match latency, cue timing against the programme file's real start,
/// a 10-hour catalog pushed while a client matches, the largest catalog that still matches within
/// 1 s, memory; and the least memory the daemon runs in at the Pi 3 budget. The benchmark's own
/// process and its clients stay outside the limits (they are the LAN).
struct BoardReport {
    /// A board's CPU budget.
    struct Budget {
        var key: String
        var name: String
        /// sysbench events/s the budget stands for, and how it was derived.
        var events: Double
        var derivation: String
        var share = 0.0
        var quotaMicroseconds = 0
        var main = Main()
        var sweep: [SweepPoint] = []
        var sweepStop = ""
    }

    /// The daemon's CPU, throttling and capture counters over a phase.
    struct Phase {
        var name = ""
        var seconds = 0.0
        var cpuSeconds = 0.0
        var periods = 0
        var throttled = 0
        var throttledSeconds = 0.0
        /// capture_frames advanced in the phase, and the file's rate.
        var frames = 0.0
        var sampleRate = 16_000.0
        /// Cumulative since the daemon started, at the phase's end.
        var dropped: UInt64 = 0
        var gaps: UInt64 = 0
        var xruns: UInt64 = 0
        var cpuPercent: Double { seconds > 0 ? 100 * cpuSeconds / seconds : 0 }
        var realTime: Double { seconds > 0 ? frames / seconds / sampleRate : 0 }
        /// Audio the capture counted minus wall time (s). capture_frames counts frames decoded,
        /// which the file source does 4096 at a time (0.256 s at 16 kHz): within a phase it runs
        /// up to that far ahead of what was delivered; the tolerance is twice that (the source drops
        /// audio only when its consumer is 4 s behind).
        var lead: Double { frames / sampleRate - seconds }
        static let leadTolerance = 0.5
        var keepsRealTime: Bool { seconds > 0 && abs(lead) <= Self.leadTolerance }
        var clean: Bool { dropped == 0 && gaps == 0 && xruns == 0 && keepsRealTime }
    }

    /// The daemon's memory at a moment (kB from smaps_rollup; bytes from the memory cgroup).
    struct Memory {
        var rssKB = 0
        var pssKB = 0
        var anonymousKB = 0
        var pssFileKB = 0
        var catalogKB = 0
        var cgroupUsage = 0
        var cgroupMax = 0
        var cgroupRSS = 0
        var cgroupCache = 0
        var cgroupMappedFile = 0
        var failures = 0
    }

    /// Match calls: latency (ms) of each answered call, and what came back.
    struct Calls {
        var latencies: [Double] = []
        /// When each answered call was sent (Clock seconds), in `latencies` order.
        var starts: [Double] = []
        var wrongItem = 0
        var noMatch = 0
        var errorOutcomes = 0
        var rpcErrors = 0
        var errorSamples: [String] = []
        var spacing = 0.0
        var count: Int { latencies.count + rpcErrors }
        var p50: Double? { Stats.percentile(latencies, 50) }
        var p99: Double? { Stats.percentile(latencies, 99) }
    }

    struct Cues {
        var cues = 0
        var expected = 0
        var startedOnce = 0
        var missing: [String] = []
        var duplicates = 0
        var unexpected: [String] = []
        /// Signed errors (ms, arrival − truth) of STARTED events fired on time (lateness 0).
        var errors: [Double] = []
        /// STARTED events the daemon itself marked late (joined inside a range, after a seek).
        var late: [String] = []
        var passes = 0
        /// Each later pass's reopen of the file against the pass's paced start (ms).
        var reopenLags: [Double] = []
        var restarts = 0
        var windowSeconds = 0.0
        var absErrors: [Double] { errors.map(abs) }
    }

    struct HotLoad {
        var bytes = 0
        var hours = 0.0
        var push = HotloadReport.Push()
        var commitToFirstMatchMs = 0.0
        var matchesUntilFirst = 0
        var firstMatch = ""
        var baseline = Calls()
        var baselinePhase = Phase()
        var during = Calls()
        var pushPhase = Phase()
        var pushThreads: [(name: String, seconds: Double)] = []
        /// BeginUpload sent and CommitUpload answered (Clock seconds).
        var pushStart = 0.0
        var commitAt = 0.0
        var failure: String?

        /// The slowest call during the push: ms, and when it was sent relative to BeginUpload.
        var slowest: (ms: Double, at: Double)? {
            guard let k = during.latencies.indices.max(by: { during.latencies[$0] < during.latencies[$1] }) else { return nil }
            return (during.latencies[k], during.starts[k] - pushStart)
        }
    }

    /// The daemon's run at one budget with the cue catalog.
    struct Main {
        var startSeconds = 0.0
        var firstMatchSeconds: Double?
        var steady = Phase()
        var matchPhase = Phase()
        var match = Calls()
        var cues = Cues()
        var hotload = HotLoad()
        var threads: [(name: String, seconds: Double)] = []
        var threadSeconds = 0.0
        var memory = Memory()
        var memoryAfterPush = Memory()
        var failure: String?
        var log = ""
        /// From the daemon's maps: whether it loads the Swift runtime as shared libraries.
        var swiftRuntimeShared: String?
    }

    struct SweepPoint {
        var hours = 0.0
        var bytes = 0
        var startSeconds = 0.0
        var calls = Calls()
        var phase = Phase()
        var memory = Memory()
        var failure: String?
        var passed: Bool { failure == nil && (calls.p99 ?? .infinity) <= 1000 && calls.rpcErrors == 0 && phase.clean }
    }

    struct MemoryTrial {
        var limitMB = 0
        var started = false
        var startSeconds = 0.0
        var seconds = 0.0
        var calls = Calls()
        var phase = Phase()
        var memory = Memory()
        var oomKills = 0
        var failure: String?
        var passed: Bool { started && failure == nil && calls.rpcErrors == 0 && !calls.latencies.isEmpty && phase.clean }
    }

    var sysbench: [Sysbench.Run] = []
    var hostEvents = 0.0
    var hostWallEvents = 0.0
    var binary = ""
    var binaryBytes = 0
    var swiftRuntime = ""
    var cpu = 0
    var programme = ""
    var programmeSeconds = 0.0
    var programmeStart = 0.0
    var catalogBytes = 0
    var catalogHours = 0.0
    var budgets: [Budget] = []
    var memoryTrials: [MemoryTrial] = []
    var memoryTrialSeconds = 0.0
    var phaseSeconds = 0.0
    var quick = false
}

enum BoardBenchmark {
    /// sysbench 1.0.20, `sysbench cpu --threads=1 --time=60 run`, single core, published on
    /// leoncode.co.uk ("Raspberry Pi CPU Benchmarks").
    static let pi3BPlus = 687.45
    static let pi4 = 1477.83
    static let memoryLimit = 256 << 20
    /// Tried from the top, down to the first that fails; 8 MB only after 12 MB passed.
    static let trialLimitsMB = [64, 32, 24, 16, 12, 8]
    static let quickTrialLimitsMB = [32, 16, 12]

    /// Fails fast, before the corpus is loaded, when the benchmark cannot run here.
    static func preflight(_ options: Options) throws {
        try CgroupJail.check()
        guard Shell.which("sysbench") != nil else {
            throw BenchError("board needs sysbench to measure this machine's single-core speed: apt-get install sysbench")
        }
        _ = try binary(options)
    }

    static func binary(_ options: Options) throws -> String {
        guard let path = options.earshotd else { return try DaemonProcess.releaseBinary() }
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        guard FileManager.default.isExecutableFile(atPath: absolute) else { throw BenchError("--earshotd \(path): not an executable file") }
        return absolute
    }

    static func run(options: Options, prepared p: Prepared, workDirectory work: String) throws -> BoardReport {
        var r = BoardReport()
        r.quick = options.quick
        let quick = options.quick
        CgroupJail.removeStale()
        CgroupJail.installSignalCleanup()
        r.binary = try binary(options)
        r.binaryBytes = ((try? FileManager.default.attributesOfItem(atPath: r.binary))?[.size] as? Int) ?? 0
        r.cpu = max(0, Machine.cores - 1)

        // 1. This machine's single-core speed, by the command the boards' figures were made with.
        let sysbenchSeconds = quick ? 5 : 20
        for k in 0..<2 {
            let run = try Sysbench.run(seconds: sysbenchSeconds)
            r.sysbench.append(run)
            say(String(format: "board: sysbench cpu --threads=1 --time=%d run (%d of 2): %.2f events/s (%.2f per CPU second of sysbench: %.1f s CPU in %.1f s)",
                       sysbenchSeconds, k + 1, run.eventsPerSecond, run.eventsPerCPUSecond, run.cpuSeconds, run.wallSeconds))
        }
        r.hostEvents = r.sysbench.map(\.eventsPerCPUSecond).max() ?? 0
        r.hostWallEvents = r.sysbench.map(\.eventsPerSecond).max() ?? 0
        let zero2 = pi3BPlus * 1.0 / 1.4
        r.budgets = [
            BoardReport.Budget(key: "pi3", name: "Pi 3 / Zero 2 W", events: zero2,
                               derivation: String(format: "Pi 3B+ (Cortex-A53 @ 1.4 GHz) %.2f events/s × 1.0/1.4 (Zero 2 W: the same A53 at 1.0 GHz) = %.0f", pi3BPlus, zero2)),
            BoardReport.Budget(key: "pi4", name: "Pi 4", events: pi4, derivation: String(format: "Pi 4 (Cortex-A72) %.2f events/s", pi4)),
        ]
        for k in r.budgets.indices {
            r.budgets[k].share = min(1, r.budgets[k].events / r.hostEvents)
            r.budgets[k].quotaMicroseconds = max(1000, Int((r.budgets[k].share * Double(CgroupJail.periodMicroseconds)).rounded()))
            say(String(format: "  %@ budget: %.0f / %.0f = %.1f %% of one core: cpu.cfs_quota_us %d per cpu.cfs_period_us %d, cpuset.cpus %d, memory.limit_in_bytes %d MB",
                       r.budgets[k].name as NSString, r.budgets[k].events, r.hostEvents, 100 * r.budgets[k].share,
                       r.budgets[k].quotaMicroseconds, CgroupJail.periodMicroseconds, r.cpu, memoryLimit >> 20))
        }

        // 2. The programme, its catalog with cues, and the catalogs pushed and swept.
        let file = p.catalogFiles.max { p.corpus.files[$0].duration < p.corpus.files[$1].duration }!
        let programmeID = p.corpus.files[file].id
        r.programmeStart = 30
        // 90 s (--quick 30 s): the cue window (≈ 130 s, --quick ≈ 45 s) holds a second loop pass, so
        // the reopen and the daemon's resync after the jump back are in it.
        r.programmeSeconds = min(quick ? 30 : 90, p.corpus.files[file].duration - r.programmeStart - 5)
        let programme = try LiveBenchmark.programmeWAV(p, file, start: r.programmeStart, seconds: r.programmeSeconds, speed: 1, work)
        let sampleRate = FingerprintParameters.sampleRate
        // The file's exact length: a pass of the loop lasts this long.
        let programmeFrames = min(p.corpus.files[file].samples.count - Int(r.programmeStart * sampleRate), Int(r.programmeSeconds * sampleRate))
        let passSeconds = Double(programmeFrames) / sampleRate
        r.programme = String(format: "`%@` from %.0f s, %.1f s, looped", programmeID, r.programmeStart, passSeconds)
        let cues = makeCues(from: r.programmeStart, seconds: passSeconds)
        let catalogs = BoardCatalogs(p, work: work, seed: options.seed)
        let mainCatalog = try catalogs.main(cueing: file, cues: cues)
        r.catalogBytes = mainCatalog.bytes
        r.catalogHours = p.catalogDuration / 3600
        let ten = try catalogs.filled(hours: 10, prefix: "board-")
        let tenBytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: ten.path)))
        let tenSHA = tenBytes.withUnsafeBytes { SHA256.hash($0) }
        say(String(format: "board: programme %@; catalog with %d cues %@ (%.2f h); push catalog %@ (%.1f h, the programme as `board-%@`)",
                   r.programme as NSString, cues.count, Fmt.bytes(mainCatalog.bytes), r.catalogHours, Fmt.bytes(ten.bytes), ten.hours,
                   programmeID as NSString))

        let setup = Setup(binary: r.binary, work: work, programme: programme, programmeID: programmeID, sampleRate: sampleRate,
                          passSeconds: passSeconds, programmeStart: r.programmeStart, cues: cues, cpu: r.cpu, quick: quick)
        r.phaseSeconds = quick ? 25 : 60
        for k in r.budgets.indices {
            let b = r.budgets[k]
            say("board: \(b.name) budget (\(Fmt.f(100 * b.share)) % of one core)")
            let t0 = Clock.now()
            r.budgets[k].main = mainRun(setup, b, catalog: mainCatalog.path, push: (tenBytes, tenSHA, ten.hours), steadySeconds: r.phaseSeconds)
            say(String(format: "  (the daemon with the cue catalog: %.0f s)", Clock.now() - t0))
            if r.budgets[k].main.swiftRuntimeShared != nil, r.swiftRuntime.isEmpty { r.swiftRuntime = r.budgets[k].main.swiftRuntimeShared! }
            (r.budgets[k].sweep, r.budgets[k].sweepStop) = sweep(setup, b, catalogs: catalogs)
        }

        // 3. The least memory it runs in, at the Pi 3 budget.
        r.memoryTrialSeconds = quick ? 10 : 30
        say("board: the least memory, at the \(r.budgets[0].name) budget")
        for limit in quick ? quickTrialLimitsMB : trialLimitsMB {
            let t0 = Clock.now()
            var trial = memoryTrial(setup, r.budgets[0], catalog: mainCatalog.path, limitMB: limit, seconds: r.memoryTrialSeconds)
            trial.seconds = Clock.now() - t0
            r.memoryTrials.append(trial)
            say("  memory.limit_in_bytes \(limit) MB (\(Fmt.f(Clock.now() - t0, 0)) s): " + (trial.passed ? "PASS" : "FAIL (\(trial.failure ?? failureReason(trial.phase, trial.calls)))")
                + String(format: "; started in %.2f s; peak charged %@, RSS %.1f MB (anonymous %.1f MB); limit hits %d, OOM kills %d", trial.startSeconds, Fmt.bytes(trial.memory.cgroupMax),
                         Double(trial.memory.rssKB) / 1024, Double(trial.memory.anonymousKB) / 1024, trial.memory.failures, trial.oomKills))
            if !trial.passed { break }
        }
        return r
    }

    /// What every daemon of the run shares.
    struct Setup {
        var binary: String
        var work: String
        var programme: String
        var programmeID: String
        var sampleRate: Double
        var passSeconds: Double
        var programmeStart: Double
        var cues: [Cue]
        var cpu: Int
        var quick: Bool
    }

    /// Point cues and 3 s ranges about every 10 s (up to 4 s of jitter, as the cue benchmark's)
    /// on the part of the reference the programme file plays, from 8 s into it to 6 s before its
    /// end (a cue near the loop's end would fire before the daemon hears the jump back).
    static func makeCues(from start: Double, seconds: Double) -> [Cue] {
        var random = SeededRandom(seed: 1414)
        var cues: [Cue] = []
        var i = 0
        while true {
            let at = start + 8 + Double(i) * 10 + Double(random.next() % 4000) / 1000
            guard at <= start + seconds - 6 else { break }
            cues.append(Cue(id: String(format: "b%02d", i), cueClass: i % 5 == 0 ? Cue.interstitialClass : "com.example.card", start: at,
                            duration: i % 3 == 1 ? 3 : nil, assetURI: i % 5 == 0 ? "https://example.com/ad\(i).m3u8" : nil))
            i += 1
        }
        return cues
    }

    // MARK: The daemon at one budget

    /// A fresh state folder holding `catalog` (hard-linked, else copied) as `<name>.earcat`, and an
    /// allow-list with an operator (the phone) and an admin (who pushes).
    static func state(_ s: Setup, _ folder: String, catalog: String?, name: String = "board") throws -> (path: String, phone: CurveKeyPair, admin: CurveKeyPair) {
        let path = "\(s.work)/\(folder)"
        try? FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: "\(path)/catalogs", withIntermediateDirectories: true)
        if let catalog {
            let target = "\(path)/catalogs/\(name).earcat"
            if link(catalog, target) != 0 { try FileManager.default.copyItem(atPath: catalog, toPath: target) }
        }
        let phone = try CurveKeyPair.generate(), admin = try CurveKeyPair.generate()
        try DaemonProcess.writeAllowList(state: path, [(phone, "phone", "operator"), (admin, "admin", "admin")])
        return (path, phone, admin)
    }

    /// Starts earshotd inside `jail`, its binary and catalogs first dropped from the page cache so
    /// the pages it reads are charged to its own memory cgroup.
    static func start(_ s: Setup, state: String, jail: CgroupJail, timeout: Double) throws -> (DaemonProcess, Double) {
        CgroupJail.dropCache(s.binary)
        for f in (try? FileManager.default.contentsOfDirectory(atPath: "\(state)/catalogs")) ?? [] {
            CgroupJail.dropCache("\(state)/catalogs/\(f)")
        }
        let log = "\(state).log"
        let t0 = Clock.now()
        do {
            let d = try DaemonProcess(path: s.binary, state: state, programme: s.programme, settings: ["--audio.loop=true"],
                                      launcher: jail.launcher, startTimeout: timeout, log: log)
            return (d, Clock.now() - t0)
        } catch {
            var why = String("\(error)".split(separator: "\n").first ?? "")
            if why.count > 160 { why = String(why.prefix(160)) + "…" }
            let oom = jail.oomKills > 0 ? "; the OOM killer killed \(jail.oomKills) process(es) in its memory cgroup (limit \(Fmt.bytes(jail.memoryLimitBytes)), peak \(Fmt.bytes(jail.memoryMaxUsage)))" : ""
            throw BenchError("earshotd did not start at \(Fmt.f(100 * jail.share)) % of a core\(oom): \(why)\n  end of its log (\(log)):\n" + DaemonProcess.tail(of: log, lines: 8))
        }
    }

    /// A reading for phases: time, the daemon's CPU, its group's throttling, its counters and its
    /// threads' CPU.
    struct Snapshot {
        var time = 0.0
        var cpu = 0.0
        var periods = 0
        var throttled = 0
        var throttledSeconds = 0.0
        var counters: [String: UInt64] = [:]
        var threads: [Int: (name: String, seconds: Double)] = [:]
    }

    static func snapshot(_ d: DaemonProcess, _ jail: CgroupJail, _ client: RpcClient) -> Snapshot {
        var s = Snapshot()
        s.counters = (try? DaemonBenchmark.blocking { () throws(RpcError) in
            try await client.call(Methods.Health.getStats, Earshot_V1_GetStatsRequest(), timeout: .seconds(10))
        })?.counters ?? [:]
        s.time = Clock.now()
        s.cpu = d.cpuSeconds()
        (s.periods, s.throttled, s.throttledSeconds) = jail.cpuStat()
        s.threads = ProcOf.threads(d.pid)
        return s
    }

    /// CPU seconds of the daemon's threads between two snapshots, by thread name, most first.
    static func threadShares(_ a: Snapshot, _ b: Snapshot) -> [(name: String, seconds: Double)] {
        var byName: [String: Double] = [:]
        for (tid, t) in b.threads { byName[t.name, default: 0] += t.seconds - (a.threads[tid]?.seconds ?? 0) }
        return byName.map { ($0.key, $0.value) }.sorted { $0.seconds > $1.seconds }
    }

    static func phase(_ name: String, _ a: Snapshot, _ b: Snapshot, rate: Double) -> BoardReport.Phase {
        var p = BoardReport.Phase(name: name)
        p.seconds = b.time - a.time
        p.cpuSeconds = b.cpu - a.cpu
        p.periods = b.periods - a.periods
        p.throttled = b.throttled - a.throttled
        p.throttledSeconds = b.throttledSeconds - a.throttledSeconds
        p.frames = Double(b.counters["capture_frames"] ?? 0) - Double(a.counters["capture_frames"] ?? 0)
        p.sampleRate = rate
        p.dropped = b.counters["capture_dropped_samples"] ?? 0
        p.gaps = b.counters["capture_gaps"] ?? 0
        p.xruns = b.counters["capture_xruns"] ?? 0
        if b.counters.isEmpty { p.frames = 0 }  // GetStats did not answer: not real time
        return p
    }

    static func memory(_ d: DaemonProcess, _ jail: CgroupJail) -> BoardReport.Memory {
        let rollup = ProcOf.smapsRollup(d.pid)
        let stat = jail.memoryStat
        return BoardReport.Memory(rssKB: rollup["Rss"] ?? 0, pssKB: rollup["Pss"] ?? 0, anonymousKB: rollup["Anonymous"] ?? 0,
                                  pssFileKB: rollup["Pss_File"] ?? 0, catalogKB: ProcOf.catalogResidentKilobytes(d.pid),
                                  cgroupUsage: jail.memoryUsage, cgroupMax: jail.memoryMaxUsage, cgroupRSS: stat["rss"] ?? 0,
                                  cgroupCache: stat["cache"] ?? 0, cgroupMappedFile: stat["mapped_file"] ?? 0, failures: jail.memoryFailures)
    }

    /// `count` Match calls (or until `until` says so), one every `spacing` seconds (by the clock,
    /// not after each answer); stops early when the daemon is gone or the calls run 20 s late.
    static func matches(_ client: RpcClient, _ daemon: DaemonProcess, count: Int, spacing: Double, programmeID: String,
                        until: (() -> Bool)? = nil) -> BoardReport.Calls {
        var c = BoardReport.Calls(spacing: spacing)
        var next = Clock.now()
        let deadline = next + (until == nil ? Double(count) * spacing + 20 : 180)
        var k = 0
        while k < count || until != nil {
            if let until, until() { break }
            guard daemon.process.isRunning else {
                c.errorSamples.append("earshotd is gone")
                break
            }
            guard Clock.now() < deadline else {
                c.errorSamples.append("the calls ran 20 s late; stopped after \(k)")
                break
            }
            let wait = next - Clock.now()
            if wait > 0 { Thread.sleep(forTimeInterval: wait) }
            next += spacing
            k += 1
            let t = Clock.now()
            do {
                let m = try DaemonBenchmark.blocking { () throws(RpcError) in
                    try await client.call(Methods.Recognizer.match, Earshot_V1_MatchRequest(), timeout: .seconds(10))
                }
                c.latencies.append((Clock.now() - t) * 1000)
                c.starts.append(t)
                switch m.outcome {
                case .match: if m.items.first?.mediaItem.id != programmeID && m.items.first?.mediaItem.id != "board-" + programmeID { c.wrongItem += 1 }
                case .noMatch: c.noMatch += 1
                default:
                    c.errorOutcomes += 1
                    if c.errorSamples.count < 3 { c.errorSamples.append(m.error.message) }
                }
            } catch {
                c.rpcErrors += 1
                if c.errorSamples.count < 3 { c.errorSamples.append("\(error.code): \(error.message)") }
            }
        }
        return c
    }

    /// Match until the programme is the answer (the session prepared and recognising), at most
    /// `timeout` s; the seconds it took.
    static func waitForProgramme(_ client: RpcClient, _ daemon: DaemonProcess, programmeID: String, timeout: Double) -> Double? {
        let t0 = Clock.now()
        while Clock.now() - t0 < timeout, daemon.process.isRunning {
            if let m = try? DaemonBenchmark.blocking({ () throws(RpcError) in
                try await client.call(Methods.Recognizer.match, Earshot_V1_MatchRequest(), timeout: .seconds(10))
            }), m.outcome == .match, m.items.first?.mediaItem.id == programmeID {
                return Clock.now() - t0
            }
            Thread.sleep(forTimeInterval: 0.2)
        }
        return nil
    }

    static func mainRun(_ s: Setup, _ b: BoardReport.Budget, catalog: String, push: (bytes: [UInt8], sha: [UInt8], hours: Double),
                        steadySeconds: Double) -> BoardReport.Main {
        var m = BoardReport.Main()
        do {
            let (state, phone, admin) = try state(s, "board-\(b.key)", catalog: catalog)
            let jail = try CgroupJail(name: "\(b.key)-main", share: b.share, cpu: s.cpu, memoryLimitBytes: memoryLimit)
            defer { jail.remove() }
            // The programme file's opens: the first is the instant playback starts.
            let watcher = try FileOpenWatcher(path: s.programme)
            defer { watcher.stop() }
            let (daemon, started) = try start(s, state: state, jail: jail, timeout: 60)
            defer { daemon.stop(grace: 10) }
            m.log = daemon.log
            m.startSeconds = started
            let serverKey = try DaemonProcess.serverPublicKey(state: state)
            let client = try RpcClient(endpoint: daemon.rpc, configuration: try DaemonProcess.curveConfiguration(state: state, keys: phone))
            defer { client.close() }
            let adminClient = try RpcClient(endpoint: daemon.rpc, configuration: try DaemonProcess.curveConfiguration(state: state, keys: admin))
            defer { adminClient.close() }
            // Cue events as they arrive (a second screen's subscriber, on this process's clock).
            let subscriber = try EventSubscriber(endpoint: daemon.events, topics: [Topics.cue], bufferLimit: 10_000,
                                                 security: ClientSecurity(serverPublicKey: serverKey, keyPair: phone))
            defer { subscriber.close() }
            let arrivals = Locked<[CueArrival]>([])
            let reader = Task.detached {
                for await e in subscriber.events {
                    let now = Clock.now()
                    if case .cue(let c) = e.body, c.kind == .started {
                        arrivals.withLock { $0.append(CueArrival(at: now, id: c.cue.id, lateness: c.latenessSeconds)) }
                    }
                }
            }
            defer { reader.cancel() }
            m.firstMatchSeconds = waitForProgramme(client, daemon, programmeID: s.programmeID, timeout: 30).map { $0 + started }
            say(String(format: "  started in %.2f s (spawn to listening), first right Match %@ s after spawn", started,
                       Fmt.f(m.firstMatchSeconds, 2) as NSString))
            if m.firstMatchSeconds == nil { throw BenchError("no Match named the programme within 30 s of the start") }
            Thread.sleep(forTimeInterval: 2)

            // 1, 2. Steady state as shipped: prerecording, following, cues.
            let s0 = snapshot(daemon, jail, client)
            Thread.sleep(forTimeInterval: steadySeconds)
            let s1 = snapshot(daemon, jail, client)
            m.steady = phase("steady", s0, s1, rate: s.sampleRate)
            m.memory = memory(daemon, jail)
            m.threads = threadShares(s0, s1)
            m.threadSeconds = s1.time - s0.time
            say(String(format: "  steady %.0f s: CPU %.2f %% of one core (%.0f %% of the budget); throttled %d of %d periods (%.2f s); capture %+.3f s off wall time; dropped %d, gaps %d, xruns %d",
                       m.steady.seconds, m.steady.cpuPercent, m.steady.cpuPercent / b.share, m.steady.throttled, m.steady.periods,
                       m.steady.throttledSeconds, m.steady.lead, m.steady.dropped, m.steady.gaps, m.steady.xruns))
            say("  threads: " + m.threads.prefix(6).map { String(format: "%@ %.2f %%", $0.name as NSString, 100 * $0.seconds / m.threadSeconds) }.joined(separator: ", "))

            // 3. Prepared Match, as a second-screen app calls it.
            m.match = matches(client, daemon, count: s.quick ? 50 : 250, spacing: 0.2, programmeID: s.programmeID)
            let s2 = snapshot(daemon, jail, client)
            m.matchPhase = phase("match", s1, s2, rate: s.sampleRate)
            say(String(format: "  Match ×%d every 200 ms: p50 %@ ms, p99 %@ ms, max %@ ms; wrong item %d, no match %d, errors %d; capture %+.3f s off wall time; dropped %d",
                       m.match.count, Fmt.f(m.match.p50, 2) as NSString, Fmt.f(m.match.p99, 2) as NSString, Fmt.f(m.match.latencies.max(), 2) as NSString,
                       m.match.wrongItem, m.match.noMatch, m.match.rpcErrors + m.match.errorOutcomes, m.matchPhase.lead, m.matchPhase.dropped))

            // 5 (first half). The same daemon without a push: Match every 100 ms, as during the push.
            m.hotload.baseline = matches(client, daemon, count: s.quick ? 50 : 150, spacing: 0.1, programmeID: s.programmeID)
            let s3 = snapshot(daemon, jail, client)
            m.hotload.baselinePhase = phase("baseline", s2, s3, rate: s.sampleRate)

            // 4. Cues, from the start to here (the push changes the catalogs): what fired against
            // where the programme truly was.
            m.cues = judgeCues(s, arrivals: arrivals.withLock { $0 }, opens: watcher.bursts(), until: s3.time)
            say(String(format: "  cues: %d of %d started exactly once over %.0f s (%d passes); |error| p50 %@, p95 %@, max %@ ms (signed median %@ ms); late %d, missing %d, duplicates %d, unexpected %d; reopen lags %@ ms",
                       m.cues.startedOnce, m.cues.expected, m.cues.windowSeconds, m.cues.passes, Fmt.f(Stats.percentile(m.cues.absErrors, 50), 1) as NSString,
                       Fmt.f(Stats.percentile(m.cues.absErrors, 95), 1) as NSString, Fmt.f(m.cues.absErrors.max(), 1) as NSString,
                       Fmt.f(Stats.median(m.cues.errors), 1) as NSString, m.cues.late.count, m.cues.missing.count, m.cues.duplicates,
                       m.cues.unexpected.count, m.cues.reopenLags.map { Fmt.f($0, 1) }.joined(separator: ", ") as NSString))

            // 5. A 10-hour catalog pushed while the phone matches every 100 ms.
            hotLoad(s, &m.hotload, daemon: daemon, jail: jail, client: client, admin: adminClient, push: push)
            m.memoryAfterPush = memory(daemon, jail)
            if !daemon.process.isRunning {
                throw BenchError("earshotd died (\(DaemonProcess.describeExit(daemon.process))\(jail.oomKills > 0 ? ", OOM killer" : "")); end of its log:\n" + DaemonProcess.tail(of: daemon.log, lines: 8))
            }
            m.swiftRuntimeShared = (ProcStatus.read("/proc/\(daemon.pid)/maps") ?? "").contains("libswiftCore.so") ? "shared (libswiftCore.so)" : "static (in the binary)"
        } catch {
            m.failure = "\(error)"
            say("  FAILED: \(error)")
        }
        return m
    }

    struct CueArrival: Sendable {
        var at: Double
        var id: String
        var lateness: Double
    }

    /// Each STARTED event against the truth. Playback starts at the file's first open (the paced
    /// source reads its clock just before opening it, and paces every later sample from that
    /// reading); a loop pass is the file opened again, but its audio is paced from the same start,
    /// so pass k begins `k × passSeconds` after it. The reopen's own time is kept as the lag of the
    /// read that crossed the end. An open away from any pass boundary is a restart (new origin).
    static func judgeCues(_ s: Setup, arrivals: [CueArrival], opens: [Double], until end: Double) -> BoardReport.Cues {
        var c = BoardReport.Cues(cues: s.cues.count)
        guard let first = opens.first else {
            c.missing = ["the programme file was never opened"]
            return c
        }
        c.windowSeconds = end - first
        var runs = [first]
        for o in opens.dropFirst() {
            let k = ((o - runs.last!) / s.passSeconds).rounded()
            if k >= 1, abs(o - (runs.last! + k * s.passSeconds)) < 1 {
                c.reopenLags.append((o - (runs.last! + k * s.passSeconds)) * 1000)
            } else {
                runs.append(o)
                c.restarts += 1
            }
        }
        // Expected starts, due before the window's end.
        var expected: [(id: String, due: Double)] = []
        for (n, origin) in runs.enumerated() {
            let runEnd = n + 1 < runs.count ? runs[n + 1] : end
            var k = 0.0
            while origin + k * s.passSeconds < runEnd {
                let pass = origin + k * s.passSeconds
                c.passes += 1
                for cue in s.cues {
                    let due = pass + (cue.start - s.programmeStart)
                    if due <= end - 0.5, due < runEnd { expected.append((cue.id, due)) }
                }
                k += 1
            }
        }
        c.expected = expected.count
        let considered = arrivals.filter { $0.at <= end + 2 }
        var used = Set<Int>()
        for e in expected {
            let candidates = considered.indices.filter { i in
                considered[i].id == e.id && !used.contains(i) && abs(considered[i].at - e.due) < s.passSeconds / 2
            }
            guard let best = candidates.min(by: { abs(considered[$0].at - e.due) < abs(considered[$1].at - e.due) }) else {
                c.missing.append(e.id)
                continue
            }
            used.insert(best)
            if candidates.count > 1 { c.duplicates += candidates.count - 1 }
            if candidates.count == 1 { c.startedOnce += 1 }
            let a = considered[best]
            let error = (a.at - e.due) * 1000
            // A start the daemon reports ≥ 0.1 s after its due moment joined a range already
            // running or came after a seek; smaller lateness is its timer's delay, measured here.
            if a.lateness >= 0.1 {
                c.late.append(String(format: "%@ (%.2f s late by its own account, %+.0f ms)", e.id as NSString, a.lateness, error))
            } else {
                c.errors.append(error)
            }
        }
        for i in considered.indices where !used.contains(i) && considered[i].at <= end {
            c.unexpected.append(String(format: "%@@%.1fs", considered[i].id as NSString, considered[i].at - first))
        }
        return c
    }

    static func hotLoad(_ s: Setup, _ h: inout BoardReport.HotLoad, daemon: DaemonProcess, jail: CgroupJail, client: RpcClient, admin: RpcClient,
                        push: (bytes: [UInt8], sha: [UInt8], hours: Double)) {
        h.bytes = push.bytes.count
        h.hours = push.hours
        let a = snapshot(daemon, jail, client)
        struct Outcome: Sendable {
            var push: HotloadReport.Push
            var begin: Double
            var commit: Double
            var firstMs: Double
            var attempts: Int
            var first: String
        }
        let outcome = SharedValue<Result<Outcome, RpcError>?>(nil)
        let finishedAt = SharedValue(0.0)
        let (bytes, sha) = (push.bytes, push.sha)
        let begin = Clock.now()
        h.pushStart = begin
        Task.detached {
            do throws(RpcError) {
                let pushed = try await HotloadBenchmark.pushAsync(admin, "tenhours", bytes, sha, enable: true, chunk: 1 << 20)
                let t = Clock.now()
                var n = 0
                while true {
                    n += 1
                    let m = try await admin.call(Methods.Recognizer.match, Earshot_V1_MatchRequest(), timeout: .seconds(30))
                    if let item = m.items.first(where: { $0.catalog == "tenhours" }) {
                        outcome.set(.success(Outcome(push: pushed, begin: begin, commit: t, firstMs: (Clock.now() - t) * 1000, attempts: n,
                                                     first: "\(item.mediaItem.id) from tenhours v\(item.catalogVersion)")))
                        break
                    }
                    if Clock.now() - t > 30 { throw RpcError(.deadlineExceeded, "no Match answered from the new catalog within 30 s of the commit") }
                }
            } catch {
                outcome.set(.failure(error))
            }
            finishedAt.set(Clock.now())
        }
        // The phone keeps matching every 100 ms through the push and the swap, and 2 s after.
        h.during = matches(client, daemon, count: 0, spacing: 0.1, programmeID: s.programmeID) {
            outcome.get() != nil && Clock.now() - finishedAt.get() > 2
        }
        let b = snapshot(daemon, jail, client)
        h.pushPhase = phase("push", a, b, rate: s.sampleRate)
        h.pushThreads = threadShares(a, b)
        switch outcome.get()! {
        case .success(let o):
            h.push = o.push
            h.commitAt = o.commit
            h.commitToFirstMatchMs = o.firstMs
            h.matchesUntilFirst = o.attempts
            h.firstMatch = o.first
            say(String(format: "  push of %@ (%.1f h): %.2f s (chunks %.2f s, commit %.0f ms, install_milliseconds %.1f); first Match from it %.0f ms after the commit reply (%d calls); Match p99 %@ ms during (slowest %@ ms sent %@ s after BeginUpload) vs %@ ms before; dropped %d",
                       Fmt.bytes(h.bytes), h.hours, o.push.seconds, o.push.uploadSeconds, o.push.commitSeconds * 1000, o.push.installMilliseconds,
                       o.firstMs, o.attempts, Fmt.f(h.during.p99, 2) as NSString, Fmt.f(h.slowest?.ms, 1) as NSString, Fmt.f(h.slowest?.at, 2) as NSString,
                       Fmt.f(h.baseline.p99, 2) as NSString, h.pushPhase.dropped))
        case .failure(let e):
            h.failure = "\(e.code): \(e.message)"
            say("  push FAILED: \(h.failure!)")
        }
    }

    // MARK: Catalog sizes

    static func sweep(_ s: Setup, _ b: BoardReport.Budget, catalogs: BoardCatalogs) -> ([BoardReport.SweepPoint], String) {
        var points: [BoardReport.SweepPoint] = []
        var sizes: [Double] = s.quick ? [10, 25] : [10, 25, 50, 100]
        var k = 0
        while k < sizes.count {
            let hours = sizes[k]
            k += 1
            var point = BoardReport.SweepPoint(hours: hours)
            let t0 = Clock.now()
            do {
                let file = try catalogs.filled(hours: hours)
                point.hours = file.hours
                point.bytes = file.bytes
                let (state, phone, _) = try state(s, "board-\(b.key)-\(Int(hours))h", catalog: file.path, name: "sweep")
                let jail = try CgroupJail(name: "\(b.key)-\(Int(hours))h", share: b.share, cpu: s.cpu, memoryLimitBytes: memoryLimit)
                defer { jail.remove() }
                let (daemon, started) = try start(s, state: state, jail: jail, timeout: 180)
                defer { daemon.stop(grace: 10) }
                point.startSeconds = started
                let client = try RpcClient(endpoint: daemon.rpc, configuration: try DaemonProcess.curveConfiguration(state: state, keys: phone))
                defer { client.close() }
                if waitForProgramme(client, daemon, programmeID: s.programmeID, timeout: 30) == nil {
                    point.failure = "no Match named the programme within 30 s"
                }
                let a = snapshot(daemon, jail, client)
                if point.failure == nil {
                    point.calls = matches(client, daemon, count: s.quick ? 25 : 60, spacing: 0.2, programmeID: s.programmeID)
                }
                let z = snapshot(daemon, jail, client)
                // From the start: real time and dropped audio include opening and checking the catalog.
                point.phase = phase("sweep", a, z, rate: s.sampleRate)
                point.memory = memory(daemon, jail)
                if !daemon.process.isRunning { point.failure = "earshotd died (\(DaemonProcess.describeExit(daemon.process)))" }
            } catch {
                point.failure = "\(error)"
            }
            points.append(point)
            say(String(format: "  %.0f h catalog (%@, %.0f s): started in %.2f s; Match p50 %@ ms, p99 %@ ms (%d calls; wrong %d, no match %d, errors %d); capture %+.3f s off wall time, dropped %d, gaps %d; CPU %.1f %% of a core; peak charged %@: %@",
                       point.hours, Fmt.bytes(point.bytes), Clock.now() - t0, point.startSeconds, Fmt.f(point.calls.p50, 1) as NSString, Fmt.f(point.calls.p99, 1) as NSString,
                       point.calls.count, point.calls.wrongItem, point.calls.noMatch, point.calls.rpcErrors + point.calls.errorOutcomes,
                       point.phase.lead, point.phase.dropped, point.phase.gaps, point.phase.cpuPercent, Fmt.bytes(point.memory.cgroupMax),
                       (point.passed ? "PASS" : "FAIL (\(point.failure ?? failureReason(point.phase, point.calls)))") as NSString))
            if !point.passed { return (points, String(format: "stopped at the first size that fails (%.0f h)", point.hours)) }
            // 200 h only when 100 h passed with room to spare (p99 under a quarter of the second).
            if !s.quick, hours == 100, (point.calls.p99 ?? .infinity) <= 250 { sizes.append(200) }
        }
        let last = sizes.last ?? 0
        return (points, last >= 200 || s.quick ? "every size passed" : String(format: "every size passed; 200 h not tried (the %.0f h p99 was over 250 ms)", last))
    }

    static func failureReason(_ phase: BoardReport.Phase, _ calls: BoardReport.Calls) -> String {
        var reasons: [String] = []
        if calls.rpcErrors > 0 { reasons.append("\(calls.rpcErrors) Match calls failed: \(calls.errorSamples.joined(separator: "; "))") }
        if calls.latencies.isEmpty { reasons.append("no Match answered") }
        if let p99 = calls.p99, p99 > 1000 { reasons.append("Match p99 \(Fmt.f(p99, 0)) ms") }
        if phase.dropped > 0 || phase.gaps > 0 || phase.xruns > 0 { reasons.append("dropped \(phase.dropped) samples in \(phase.gaps) gaps, \(phase.xruns) xruns") }
        if !phase.keepsRealTime { reasons.append("capture \(Fmt.f(phase.lead, 2)) s off wall time over \(Fmt.f(phase.seconds, 0)) s") }
        return reasons.isEmpty ? "—" : reasons.joined(separator: "; ")
    }

    // MARK: Memory

    static func memoryTrial(_ s: Setup, _ b: BoardReport.Budget, catalog: String, limitMB: Int, seconds: Double) -> BoardReport.MemoryTrial {
        var t = BoardReport.MemoryTrial(limitMB: limitMB)
        do {
            let (state, phone, _) = try state(s, "board-memory-\(limitMB)", catalog: catalog)
            let jail = try CgroupJail(name: "memory-\(limitMB)", share: b.share, cpu: s.cpu, memoryLimitBytes: limitMB << 20)
            defer { jail.remove() }
            do {
                let (daemon, started) = try start(s, state: state, jail: jail, timeout: 60)
                defer { daemon.stop(grace: 10) }
                t.started = true
                t.startSeconds = started
                let client = try RpcClient(endpoint: daemon.rpc, configuration: try DaemonProcess.curveConfiguration(state: state, keys: phone))
                defer { client.close() }
                let named = waitForProgramme(client, daemon, programmeID: s.programmeID, timeout: 15) != nil
                let a = snapshot(daemon, jail, client)
                if named {
                    t.calls = matches(client, daemon, count: Int(seconds), spacing: 1, programmeID: s.programmeID)
                } else {
                    t.failure = "no Match named the programme within 15 s of the start"
                }
                let z = snapshot(daemon, jail, client)
                t.phase = phase("memory", a, z, rate: s.sampleRate)
                t.memory = memory(daemon, jail)
                if !daemon.process.isRunning {
                    t.failure = "earshotd died (\(DaemonProcess.describeExit(daemon.process))\(jail.oomKills > 0 ? ", OOM killer" : ""))"
                }
            } catch {
                t.failure = "\(error)"
            }
            t.oomKills = jail.oomKills
            t.memory.cgroupMax = jail.memoryMaxUsage
            t.memory.failures = jail.memoryFailures
        } catch {
            t.failure = "\(error)"
        }
        return t
    }
}

/// The catalogs of the board benchmark, built once and kept as files in the work folder.
final class BoardCatalogs {
    let p: Prepared
    let work: String
    let seed: UInt64
    private var filler: FillerPeaks?
    private var built: [String: (path: String, bytes: Int, hours: Double)] = [:]

    init(_ p: Prepared, work: String, seed: UInt64) {
        self.p = p
        self.work = work
        self.seed = seed
    }

    private func corpusReferences(prefix: String) -> [(Signature, MediaItem)] {
        p.catalogFiles.enumerated().map { k, i in
            (p.signatures[k], MediaItem(id: prefix + p.corpus.files[i].id, title: p.corpus.files[i].name))
        }
    }

    /// The corpus catalog with `cues` on the programme's reference.
    func main(cueing file: Int, cues: [Cue]) throws -> (path: String, bytes: Int, hours: Double) {
        var c = CustomCatalog()
        for (k, i) in p.catalogFiles.enumerated() {
            try c.addReferenceSignature(p.signatures[k], representing: [MediaItem(id: p.corpus.files[i].id, title: p.corpus.files[i].name)],
                                        cues: i == file ? cues : [])
        }
        return try write(c, name: "board-cues")
    }

    /// The corpus references (ids after `prefix`) plus filler references (as the scale benchmark
    /// makes them) to `hours`; the same seed, so a smaller catalog is a prefix of a bigger one.
    func filled(hours: Double, prefix: String = "") throws -> (path: String, bytes: Int, hours: Double) {
        let name = "board-\(prefix)\(Int(hours))h"
        if let done = built[name] { return done }
        if filler == nil { filler = try FillerPeaks(p) }
        let t0 = Clock.now()
        var c = CustomCatalog()
        for (s, item) in corpusReferences(prefix: prefix) { try c.addReferenceSignature(s, representing: [item]) }
        var rng = SeededRandom(seed: deriveSeed(seed, 0xB0A2D))
        var left = max(0, hours * 3600 - p.catalogDuration)
        var index = 0
        while left > 1 {
            let duration = min(ScaleBenchmark.fillerReferenceSeconds, left)
            try c.addReferenceSignature(try filler!.signature(duration: duration, rng: &rng),
                                        representing: [MediaItem(id: String(format: "filler-%04d", index))])
            left -= duration
            index += 1
        }
        let out = try write(c, name: name)
        built[name] = out
        say(String(format: "  built the %.1f h catalog (%@) in %.1f s", out.hours, Fmt.bytes(out.bytes), Clock.now() - t0))
        return out
    }

    private func write(_ c: CustomCatalog, name: String) throws -> (path: String, bytes: Int, hours: Double) {
        let bytes = try c.dataRepresentation()
        let path = "\(work)/\(name).earcat"
        try AtomicFile.write(bytes, to: path)
        return (path, bytes.count, c.totalDuration / 3600)
    }
}
