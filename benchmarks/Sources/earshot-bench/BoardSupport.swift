import EarshotSync
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

// What the board benchmark needs around the daemon: cgroup v1 groups to run it in, the host's
// sysbench speed, an inotify watch on the programme file, and /proc readings of another process.

/// One daemon's cgroups (v1): a CPU share of one core as CFS bandwidth (`cpu.cfs_quota_us` per
/// `cpu.cfs_period_us`), pinned to one CPU (`cpuset.cpus`), and a memory limit
/// (`memory.limit_in_bytes`). The daemon enters them before it execs (`launcher`); the groups are
/// removed by `remove()` once it is gone.
final class CgroupJail {
    static let root = "/sys/fs/cgroup"
    static let prefix = "earshot-bench-board"
    /// CFS period: 10 ms, so a throttled daemon waits at most one period's rest (≈ 9 ms at a
    /// 14 % share) at a time, nearer a slow core than the default 100 ms period.
    static let periodMicroseconds = 10_000

    let name: String
    let share: Double
    let quotaMicroseconds: Int
    let cpu: Int
    let memoryLimitBytes: Int
    private var removed = false

    var cpuPath: String { "\(Self.root)/cpu/\(name)" }
    var cpusetPath: String { "\(Self.root)/cpuset/\(name)" }
    var memoryPath: String { "\(Self.root)/memory/\(name)" }
    private var paths: [String] { [cpuPath, cpusetPath, memoryPath] }

    /// Refuses clearly when the benchmark cannot make cgroups here.
    static func check() throws {
        guard getuid() == 0 else {
            throw BenchError("board runs earshotd inside cgroups it creates under \(root): run it as root (sudo)")
        }
        for (controller, file) in [("cpu", "cpu.cfs_quota_us"), ("cpuset", "cpuset.cpus"), ("memory", "memory.limit_in_bytes")] {
            guard FileManager.default.fileExists(atPath: "\(root)/\(controller)/\(file)") else {
                let mounts = (ProcStatus.read("/proc/self/mounts") ?? "").split(separator: "\n")
                    .filter { $0.contains("cgroup") }.map { "  " + $0 }.joined(separator: "\n")
                throw BenchError("board needs cgroup v1 with the \(controller) controller mounted at \(root)/\(controller) "
                                 + "(\(root)/\(controller)/\(file) is missing). cgroup mounts here:\n\(mounts.isEmpty ? "  none" : mounts)\n"
                                 + "(a cgroup v2-only system: boot with systemd.unified_cgroup_hierarchy=0, or mount the v1 controllers)")
            }
        }
    }

    /// Groups a killed earlier run left behind: empty ones are removed; one with a process still in
    /// it (a daemon whose benchmark was killed with SIGKILL) is named, not touched.
    static func removeStale() {
        for controller in ["cpu", "cpuset", "memory"] {
            let dir = "\(root)/\(controller)"
            for entry in (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [] where entry.hasPrefix(prefix) {
                let procs = (ProcStatus.read("\(dir)/\(entry)/cgroup.procs") ?? "").split(separator: "\n")
                if procs.isEmpty {
                    if rmdir("\(dir)/\(entry)") == 0 { say("  removed a stale cgroup \(dir)/\(entry)") }
                } else {
                    say("  warning: \(dir)/\(entry) is left from another run and still holds process(es) \(procs.joined(separator: ", ")) "
                        + "(a daemon whose benchmark was killed?): they compete for CPU \(ProcStatus.read("\(root)/cpuset/\(entry)/cpuset.cpus")?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "?")")
                }
            }
        }
    }

    /// Groups in use, for the signal handler.
    private static let live = Locked<Set<String>>([])
    private static let handlers = Locked<[DispatchSourceSignal]>([])

    /// On SIGINT or SIGTERM the daemons in this run's groups are killed and the groups removed
    /// before the benchmark exits, so an interrupted run leaves no daemon pinned to a CPU.
    static func installSignalCleanup() {
        handlers.withLock { installed in
            guard installed.isEmpty else { return }
            for sig in [SIGINT, SIGTERM] {
                signal(sig, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
                source.setEventHandler {
                    say("\nearshot-bench: signal \(sig): stopping the daemons in this run's cgroups and removing the groups")
                    for name in live.withLock({ $0 }) {
                        let pids = (ProcStatus.read("\(root)/cpu/\(name)/cgroup.procs") ?? "").split(separator: "\n").compactMap { Int32($0) }
                        for pid in pids { kill(pid, SIGKILL) }
                        for controller in ["cpu", "cpuset", "memory"] {
                            var tries = 0
                            while rmdir("\(root)/\(controller)/\(name)") != 0, errno == EBUSY, tries < 30 {
                                usleep(100_000)
                                tries += 1
                            }
                        }
                    }
                    exit(128 + sig)
                }
                source.resume()
                installed.append(source)
            }
        }
    }

    init(name: String, share: Double, cpu: Int, memoryLimitBytes: Int) throws {
        self.name = "\(Self.prefix)-\(getpid())-\(name)"
        self.share = share
        quotaMicroseconds = max(1000, Int((share * Double(Self.periodMicroseconds)).rounded()))
        self.cpu = cpu
        self.memoryLimitBytes = memoryLimitBytes
        _ = Self.live.withLock { $0.insert(self.name) }
        for path in paths {
            guard mkdir(path, 0o755) == 0 || errno == EEXIST else {
                let reason = String(cString: strerror(errno))
                remove()
                throw BenchError("cannot create the cgroup \(path): \(reason)")
            }
        }
        do {
            try Self.write("\(cpuPath)/cpu.cfs_period_us", "\(Self.periodMicroseconds)")
            try Self.write("\(cpuPath)/cpu.cfs_quota_us", "\(quotaMicroseconds)")
            try Self.write("\(cpusetPath)/cpuset.cpus", "\(cpu)")
            let mems = (ProcStatus.read("\(Self.root)/cpuset/cpuset.mems") ?? "0").trimmingCharacters(in: .whitespacesAndNewlines)
            try Self.write("\(cpusetPath)/cpuset.mems", mems.isEmpty ? "0" : mems)
            try Self.write("\(memoryPath)/memory.limit_in_bytes", "\(memoryLimitBytes)")
        } catch {
            remove()
            throw error
        }
    }

    deinit { remove() }

    /// A shell that moves itself into the three groups and then execs the command after it, so
    /// the pid is the daemon's and nothing of the daemon ever runs outside the limits.
    var launcher: [String] {
        let enter = paths.map { "echo $$ > \($0)/cgroup.procs" }.joined(separator: " && ")
        return ["/bin/sh", "-c", "\(enter) && exec \"$@\"", "earshot-board-launcher"]
    }

    /// `cpu.stat`: CFS periods, periods in which the group was throttled, and the time it spent
    /// throttled (seconds).
    func cpuStat() -> (periods: Int, throttled: Int, throttledSeconds: Double) {
        let fields = Self.keyValues(ProcStatus.read("\(cpuPath)/cpu.stat"))
        return (fields["nr_periods"] ?? 0, fields["nr_throttled"] ?? 0, Double(fields["throttled_time"] ?? 0) / 1e9)
    }

    var memoryMaxUsage: Int { Int((ProcStatus.read("\(memoryPath)/memory.max_usage_in_bytes") ?? "").trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0 }
    var memoryUsage: Int { Int((ProcStatus.read("\(memoryPath)/memory.usage_in_bytes") ?? "").trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0 }
    var memoryFailures: Int { Int((ProcStatus.read("\(memoryPath)/memory.failcnt") ?? "").trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0 }
    /// `memory.stat` (bytes): rss (anonymous), cache, mapped_file, …
    var memoryStat: [String: Int] { Self.keyValues(ProcStatus.read("\(memoryPath)/memory.stat")) }
    /// Processes the kernel's OOM killer killed in the group (`oom_kill` of memory.oom_control).
    var oomKills: Int { Self.keyValues(ProcStatus.read("\(memoryPath)/memory.oom_control"))["oom_kill"] ?? 0 }

    /// Removes the groups (after the daemon is gone: a group with a task in it cannot be removed;
    /// waits up to 5 s for an exiting one).
    func remove() {
        guard !removed else { return }
        removed = true
        for path in paths where FileManager.default.fileExists(atPath: path) {
            var tries = 0
            while rmdir(path) != 0, errno == EBUSY, tries < 50 {
                usleep(100_000)
                tries += 1
            }
            if FileManager.default.fileExists(atPath: path) {
                say("  warning: could not remove the cgroup \(path): \(String(cString: strerror(errno)))")
            }
        }
        _ = Self.live.withLock { $0.remove(name) }
    }

    /// Writes a cgroup file (not atomically: a cgroup file takes one write, no temporary file).
    static func write(_ path: String, _ value: String) throws {
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { throw BenchError("cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let bytes = Array(value.utf8)
        guard Glibc.write(fd, bytes, bytes.count) == bytes.count else {
            throw BenchError("cannot write \(value) to \(path): \(String(cString: strerror(errno)))")
        }
    }

    static func keyValues(_ text: String?) -> [String: Int] {
        var out: [String: Int] = [:]
        for line in (text ?? "").split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2, let v = Int(parts[1]) { out[String(parts[0])] = v }
        }
        return out
    }

    /// Drops a file's clean pages from the page cache (pages some process maps stay), so the next
    /// process to read it is charged for them in its own memory cgroup.
    static func dropCache(_ path: String) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)
        close(fd)
    }
}

/// `sysbench cpu --threads=1 --time=N run`: events per second of wall time, as published for the
/// boards, and per CPU second of sysbench (the same on an idle machine; on a busy one the
/// CPU-second figure is the core's speed, which is what a CFS quota hands out).
enum Sysbench {
    struct Run {
        var seconds: Int
        var events = 0
        var wallSeconds = 0.0
        var eventsPerSecond = 0.0
        var cpuSeconds = 0.0
        var eventsPerCPUSecond: Double { cpuSeconds > 0 ? Double(events) / cpuSeconds : eventsPerSecond }
    }

    static func run(seconds: Int) throws -> Run {
        guard let exe = Shell.which("sysbench") else {
            throw BenchError("board needs sysbench to measure this machine's single-core speed: apt-get install sysbench")
        }
        var before = rusage(), after = rusage()
        getrusage(RUSAGE_CHILDREN.rawValue, &before)
        let result = try Shell.run(exe, ["cpu", "--threads=1", "--time=\(seconds)", "run"])
        getrusage(RUSAGE_CHILDREN.rawValue, &after)
        guard result.status == 0 else { throw BenchError("sysbench failed: \(result.error)") }
        var r = Run(seconds: seconds)
        func cpuSeconds(_ u: rusage) -> Double {
            Double(u.ru_utime.tv_sec) + Double(u.ru_utime.tv_usec) * 1e-6 + Double(u.ru_stime.tv_sec) + Double(u.ru_stime.tv_usec) * 1e-6
        }
        r.cpuSeconds = cpuSeconds(after) - cpuSeconds(before)
        for line in result.output.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2 else { continue }
            switch parts[0] {
            case "events per second": r.eventsPerSecond = Double(parts[1]) ?? 0
            case "total number of events": r.events = Int(parts[1]) ?? 0
            case "total time": r.wallSeconds = Double(parts[1].filter { $0.isNumber || $0 == "." }) ?? 0
            default: break
            }
        }
        guard r.eventsPerSecond > 0, r.events > 0 else { throw BenchError("sysbench printed no events per second:\n\(result.output)") }
        return r
    }
}

/// Times on the monotonic clock (`Clock.now()`) at which a file was opened by anyone (inotify
/// IN_OPEN), read by a thread of its own as they happen.
final class FileOpenWatcher: @unchecked Sendable {
    private let fd: Int32
    private let stopping = Atomic<Bool>(false)
    private let times = Locked<[Double]>([])
    private let finished = DispatchSemaphore(value: 0)
    private var stopped = false

    init(path: String) throws {
        fd = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard fd >= 0 else { throw BenchError("inotify_init1: \(String(cString: strerror(errno)))") }
        guard inotify_add_watch(fd, path, UInt32(IN_OPEN)) >= 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw BenchError("cannot watch \(path) with inotify: \(reason)")
        }
        let thread = Thread { [self] in watch() }
        thread.name = "board-inotify"
        thread.start()
    }

    deinit { stop() }

    private func watch() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !stopping.load(ordering: .relaxed) {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 100) > 0 else { continue }
            let now = Clock.now()
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            guard n > 0 else { continue }
            var offset = 0, opens = 0
            // struct inotify_event: wd (4), mask (4), cookie (4), len (4), name (len bytes).
            while offset + 16 <= n {
                let mask = buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self) }
                let length = buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self) }
                if mask & UInt32(IN_OPEN) != 0 { opens += 1 }
                offset += 16 + Int(length)
            }
            if opens > 0 { times.withLock { $0.append(contentsOf: repeatElement(now, count: opens)) } }
        }
        finished.signal()
    }

    /// Every open seen so far.
    var opens: [Double] { times.withLock { $0 } }

    /// The first open of each burst (opens closer than `gap` seconds to the one before belong to it).
    func bursts(gap: Double = 0.5) -> [Double] {
        var out: [Double] = []
        var last = -Double.infinity
        for t in opens.sorted() {
            if t - last > gap { out.append(t) }
            last = t
        }
        return out
    }

    func stop() {
        guard !stopped else { return }
        stopped = true
        stopping.store(true, ordering: .relaxed)
        finished.wait()
        close(fd)
    }
}

/// Readings of another process from /proc.
enum ProcOf {
    /// /proc/PID/smaps_rollup in kB: Rss, Pss, Pss_Anon, Pss_File, Anonymous, …
    static func smapsRollup(_ pid: Int32) -> [String: Int] {
        var out: [String: Int] = [:]
        for line in (ProcStatus.read("/proc/\(pid)/smaps_rollup") ?? "").split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 2, fields[0].hasSuffix(":"), let kb = Int(fields[1]) else { continue }
            out[String(fields[0].dropLast())] = kb
        }
        return out
    }

    /// Resident kB of the process's catalog mappings (`.earcat`, also of deleted files).
    static func catalogResidentKilobytes(_ pid: Int32) -> Int {
        var inside = false, total = 0
        for line in (ProcStatus.read("/proc/\(pid)/smaps") ?? "").split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let first = fields.first else { continue }
            if first.contains("-"), first.allSatisfy({ $0.isHexDigit || $0 == "-" }) {
                inside = line.hasSuffix(".earcat") || line.hasSuffix(".earcat (deleted)")
            } else if inside, first == "Rss:", fields.count >= 2, let kb = Int(fields[1]) {
                total += kb
            }
        }
        return total
    }

    /// CPU seconds of each thread, by thread id: (name, seconds).
    static func threads(_ pid: Int32) -> [Int: (name: String, seconds: Double)] {
        var out: [Int: (String, Double)] = [:]
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? [] {
            guard let tid = Int(entry), let stat = ProcStatus.read("/proc/\(pid)/task/\(entry)/stat"),
                  let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")") else { continue }
            let name = String(stat[stat.index(after: open)..<close])
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 12, let u = Double(fields[11]), let s = Double(fields[12]) else { continue }
            out[tid] = (name, (u + s) / ticks)
        }
        return out
    }
}
