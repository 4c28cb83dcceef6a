import EarshotCore
import EarshotSync
import EarshotTransport
import EarshotWire
import Foundation
import Synchronization
import EarshotSystem

#if canImport(Glibc)
    import Glibc
#endif

/// The daemon benchmark: `earshotd` as a real process on loopback, driven by the Swift
/// client. RPC round trips, 100 concurrent clients, event latency, 10 000 events/s to 10
/// subscribers beside a stalled one, and the daemon's CPU and memory while prerecording.
struct DaemonReport {
    var sequential: [Double] = []
    var sequentialWrong = 0
    var curveSequential: [Double] = []
    var concurrent: [Double] = []
    var concurrentErrors = 0
    var concurrentClients = 0
    /// First calls of 100 clients connecting at once, and the kernel's listen-queue overflows meanwhile.
    var connectBurst: [Double] = []
    var connectOverflows: Int?
    var connectFailures = 0
    var matchEventLatency: [Double] = []
    var loadRate = 0
    var loadSeconds = 0.0
    var loadReceived: [Int] = []
    var loadExpected = 0
    var loadGaps: [Int] = []
    var matchDuringLoad: [Double] = []
    var stalledSubscriber = false
    var idleCPUPercent = 0.0
    var rssMB = 0.0
    var rssFileMB = 0.0
    var rssAnonMB = 0.0
    var catalogMB = 0.0
    var steady = SteadyMatches()
}

/// `Match` on a prepared box while a clean programme plays, as a script calls it: one call after
/// another, each answer counted. Every call should answer MATCH with the programme.
struct SteadyMatches {
    var programmeSeconds = 0.0
    var calls = 0
    var matches = 0
    var noMatch = 0
    var otherItem = 0
    var errors = 0
    /// Stream times (s) of the NO_MATCH answers' windows, and where in the looped programme they ended.
    var noMatchAt: [(streamTime: Double, programme: Double)] = []
    var latencies: [Double] = []
}

enum DaemonBenchmark {
    static func run(options: Options, prepared p: Prepared, workDirectory: String) throws -> DaemonReport {
        var r = DaemonReport()
        let daemonPath = try DaemonProcess.releaseBinary()
        let state = try DaemonProcess.stateFolder(in: workDirectory, named: "daemon-state", catalog: p.catalogPath)
        r.catalogMB = Double(p.catalogBytes) / 1_048_576
        let file = p.catalogFiles.first { p.corpus.files[$0].duration > 180 }!
        let programme = try LiveBenchmark.programmeWAV(p, file, start: 30, seconds: 150, speed: 1, workDirectory)
        let expectedID = p.corpus.files[file].id

        // 1. Idle daemon prerecording: CPU and memory (follow off: nobody asks, nothing matches).
        do {
            let daemon = try DaemonProcess(path: daemonPath, state: state, programme: programme,
                                           settings: ["--session.follow=false", "--security.mode=none"])
            defer { daemon.stop() }
            Thread.sleep(forTimeInterval: 5)
            let cpu0 = daemon.cpuSeconds(), t0 = Clock.now()
            Thread.sleep(forTimeInterval: options.quick ? 10 : 30)
            r.idleCPUPercent = 100 * (daemon.cpuSeconds() - cpu0) / (Clock.now() - t0)
            r.rssMB = ProcStatus.megabytes("VmRSS", pid: daemon.pid) ?? 0
            r.rssFileMB = ProcStatus.megabytes("RssFile", pid: daemon.pid) ?? 0
            r.rssAnonMB = ProcStatus.megabytes("RssAnon", pid: daemon.pid) ?? 0
            say(String(format: "daemon prerecording: CPU %.2f %% of one core; RSS %.1f MB (file-backed %.1f, anonymous %.1f)",
                       r.idleCPUPercent, r.rssMB, r.rssFileMB, r.rssAnonMB))

            // 2. Sequential Match round trips (prepared, ≥ 3 s heard).
            let client = try RpcClient(endpoint: daemon.rpc)
            defer { client.close() }
            for _ in 0..<(options.quick ? 100 : 300) {
                let t = Clock.now()
                let result = try blocking { () throws(RpcError) in try await client.call(Methods.Recognizer.match, Earshot_V1_MatchRequest()) }
                r.sequential.append((Clock.now() - t) * 1000)
                if result.items.first?.mediaItem.id != expectedID { r.sequentialWrong += 1 }
            }
            say(String(format: "Match round trip: p50 %.2f ms, p99 %.2f ms", Stats.percentile(r.sequential, 50)!, Stats.percentile(r.sequential, 99)!))

        }

        // 2b. 1,000 back-to-back calls while a clean programme plays, follow on as shipped (a
        // stream is followed meanwhile), the programme looped so that the window crosses its seams.
        do {
            let steadyProgramme = try LiveBenchmark.programmeWAV(p, file, start: 30, seconds: 60, speed: 1, workDirectory)
            let daemon = try DaemonProcess(path: daemonPath, state: state, programme: steadyProgramme,
                                           settings: ["--security.mode=none"])
            defer { daemon.stop() }
            r.steady = try steadyMatches(daemon: daemon, calls: options.quick ? 300 : 1000, programmeSeconds: 60, expectedID: expectedID)
        }

        // 3. The same sequential Match calls with CURVE (the default): what encryption and
        // authentication add; then 100 clients at once, each with its own key.
        do {
            let keys = try CurveKeyPair.generate()
            r.concurrentClients = 100
            let clientKeys = try (0..<r.concurrentClients).map { _ in try CurveKeyPair.generate() }
            try DaemonProcess.writeAllowList(state: state, [(keys, "bench", "operator")]
                                             + clientKeys.enumerated().map { ($1, String(format: "client-%03d", $0), "operator") })
            let daemon = try DaemonProcess(path: daemonPath, state: state, programme: programme, settings: ["--session.follow=false"])
            defer { daemon.stop() }
            let configuration = try DaemonProcess.curveConfiguration(state: state, keys: keys)
            let client = try RpcClient(endpoint: daemon.rpc, configuration: configuration)
            defer { client.close() }
            Thread.sleep(forTimeInterval: 5)
            for _ in 0..<(options.quick ? 100 : 300) {
                let t = Clock.now()
                _ = try blocking { () throws(RpcError) in try await client.call(Methods.Recognizer.match, Earshot_V1_MatchRequest()) }
                r.curveSequential.append((Clock.now() - t) * 1000)
            }
            say(String(format: "Match round trip with CURVE: p50 %.2f ms, p99 %.2f ms", Stats.percentile(r.curveSequential, 50)!,
                       Stats.percentile(r.curveSequential, 99)!))
            try concurrentClients(daemon: daemon, state: state, keys: clientKeys, &r)
        }

        // 4. Events: match latency, then 10 000 events/s to 10 subscribers next to a stalled one.
        r.loadRate = 10_000
        let daemon = try DaemonProcess(path: daemonPath, state: state, programme: programme,
                                       settings: ["--events.load_test_rate=\(r.loadRate)", "--security.mode=none"])
        defer { daemon.stop() }
        do {
            let sub = try EventSubscriber(endpoint: daemon.events, topics: [Topics.match], bufferLimit: 1000)
            defer { sub.close() }
            let client = try RpcClient(endpoint: daemon.rpc)
            defer { client.close() }
            let collected = SharedList()
            // Only results made from now on: events queued before the reader ran would count
            // the benchmark's own delay.
            let from = Date().timeIntervalSince1970 * 1000 + 4000
            let reader = Task.detached {
                for await e in sub.events {
                    let now = Date().timeIntervalSince1970 * 1000
                    if case .match(let m) = e.body, Double(m.madeAtUnixMs) >= from {
                        collected.append(now - Double(m.madeAtUnixMs))
                    }
                }
            }
            Thread.sleep(forTimeInterval: 4.1)
            // Each Match result is published on the match topic as it is made.
            for _ in 0..<50 {
                _ = try? blocking { () throws(RpcError) in try await client.call(Methods.Recognizer.match, Earshot_V1_MatchRequest()) }
                Thread.sleep(forTimeInterval: 0.02)
            }
            Thread.sleep(forTimeInterval: 0.5)
            reader.cancel()
            r.matchEventLatency = collected.all
        }
        do {
            // A stalled subscriber: connects, subscribes to everything, never reads.
            let stalled = try EventSubscriber(endpoint: daemon.events, topics: [""], bufferLimit: 1, receiveHighWaterMark: 10)
            r.stalledSubscriber = true
            defer { stalled.close() }
            var subscribers: [EventSubscriber] = []
            for _ in 0..<10 { subscribers.append(try EventSubscriber(endpoint: daemon.events, topics: [Topics.loadTest], bufferLimit: 200_000)) }
            Thread.sleep(forTimeInterval: 1)
            r.loadSeconds = options.quick ? 5 : 10
            let counts = (0..<10).map { _ in SharedCounter() }
            var readers: [Task<Void, Never>] = []
            for (k, s) in subscribers.enumerated() {
                let c = counts[k]
                readers.append(Task.detached {
                    var last: UInt64 = 0
                    for await e in s.events {
                        if last != 0, e.seq != last + 1 { c.gap() }
                        last = e.seq
                        c.add()
                    }
                })
            }
            let client = try RpcClient(endpoint: daemon.rpc)
            defer { client.close() }
            let t0 = Clock.now()
            let first = counts.map { $0.count }
            while Clock.now() - t0 < r.loadSeconds {
                let t = Clock.now()
                _ = try? blocking { () throws(RpcError) in try await client.call(Methods.Recognizer.match, Earshot_V1_MatchRequest()) }
                r.matchDuringLoad.append((Clock.now() - t) * 1000)
                Thread.sleep(forTimeInterval: 0.05)
            }
            let elapsed = Clock.now() - t0
            r.loadReceived = zip(counts, first).map { $0.count - $1 }
            r.loadExpected = Int(Double(r.loadRate) * elapsed)
            r.loadGaps = counts.map { $0.gaps }
            for s in subscribers { s.close() }
            for t in readers { t.cancel() }
        }
        say(String(format: "match event latency p50 %.2f ms, p99 %.2f ms (%d events)", Stats.percentile(r.matchEventLatency, 50) ?? -1,
                   Stats.percentile(r.matchEventLatency, 99) ?? -1, r.matchEventLatency.count))
        say("load: \(r.loadRate)/s for \(r.loadSeconds) s to 10 subscribers + 1 stalled: received \(r.loadReceived) of ≈\(r.loadExpected); gaps \(r.loadGaps); "
            + String(format: "Match during load p50 %.2f ms, p99 %.2f ms", Stats.percentile(r.matchDuringLoad, 50) ?? -1, Stats.percentile(r.matchDuringLoad, 99) ?? -1))
        return r
    }

    static func steadyMatches(daemon: DaemonProcess, calls: Int, programmeSeconds: Double, expectedID: String) throws -> SteadyMatches {
        var m = SteadyMatches()
        m.programmeSeconds = programmeSeconds
        let client = try RpcClient(endpoint: daemon.rpc)
        defer { client.close() }
        Thread.sleep(forTimeInterval: 12)  // a full window heard
        for _ in 0..<calls {
            let t = Clock.now()
            do {
                let result = try blocking { () throws(RpcError) in try await client.call(Methods.Recognizer.match, Earshot_V1_MatchRequest()) }
                m.latencies.append((Clock.now() - t) * 1000)
                switch result.outcome {
                case .match where result.items.first?.mediaItem.id == expectedID: m.matches += 1
                case .match: m.otherItem += 1
                case .noMatch:
                    m.noMatch += 1
                    m.noMatchAt.append((result.streamTime, result.streamTime.truncatingRemainder(dividingBy: programmeSeconds)))
                default: m.errors += 1
                }
            } catch {
                m.errors += 1
            }
            m.calls += 1
            Thread.sleep(forTimeInterval: 0.05)
        }
        say("steady Match: \(m.calls) calls: \(m.matches) MATCH, \(m.noMatch) NO_MATCH, \(m.otherItem) another item, \(m.errors) errors; "
            + "NO_MATCH windows ended at stream/programme s: " + m.noMatchAt.map { String(format: "%.2f/%.2f", $0.streamTime, $0.programme) }.joined(separator: " "))
        return m
    }

    static func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws(RpcError) -> T) throws(RpcError) -> T {
        let box = SharedValue<Result<T, RpcError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            do throws(RpcError) { box.set(.success(try await body())) } catch { box.set(.failure(error)) }
            done.signal()
        }
        done.wait()
        return try box.get()!.get()
    }

    /// 100 clients, each with its own key as on a real LAN (in plain mode every connection from
    /// one address is one client, whose calls in flight are capped at 64), on one client I/O
    /// thread: 100 threads in this process would measure the benchmark's own scheduling on 2
    /// cores. All connect at once and each makes one Health check (the burst of connections is
    /// timed on its own), then each makes 10 Match calls, one at a time.
    static func concurrentClients(daemon: DaemonProcess, state: String, keys: [CurveKeyPair], _ r: inout DaemonReport) throws {
        let loop = try TransportLoop()
        loop.start()
        defer { loop.stop() }
        let endpoint = daemon.rpc
        // A client starts connecting when it is made: the burst is timed (and the kernel's drops
        // counted) from before the first one.
        let overflowsBefore = ListenQueue.overflows()
        let burstStart = Clock.now()
        let clients = try keys.map { k in
            try RpcClient(loop: loop, endpoint: endpoint, configuration: try DaemonProcess.curveConfiguration(state: state, keys: k))
        }
        defer { for c in clients { c.close() } }
        (r.connectBurst, r.connectFailures) = ClientFanOut.timedCalls(clients, calls: 1, from: burstStart) { c in
            _ = try await c.call(Methods.Health.check, Earshot_V1_HealthCheckRequest(), timeout: .seconds(10))
            return true
        }
        if let before = overflowsBefore, let after = ListenQueue.overflows() { r.connectOverflows = after - before }
        let (latencies, errors) = ClientFanOut.timedCalls(clients, calls: 10) { c in
            try await c.call(Methods.Recognizer.match, Earshot_V1_MatchRequest(), timeout: .seconds(10)).outcome == .match
        }
        r.concurrent = latencies
        r.concurrentErrors = errors
        say(String(format: "100 clients connecting at once: first call p50 %.2f ms, p99 %.2f ms; listen queue overflows %@",
                   Stats.percentile(r.connectBurst, 50) ?? -1, Stats.percentile(r.connectBurst, 99) ?? -1,
                   r.connectOverflows.map { String($0) } ?? "unknown"))
        say(String(format: "100 clients × 10 Match: %d errors, p50 %.2f ms, p99 %.2f ms", r.concurrentErrors,
                   Stats.percentile(r.concurrent, 50) ?? -1, Stats.percentile(r.concurrent, 99) ?? -1))
    }
}

final class SharedList: Sendable {
    private let values = Locked<[Double]>([])
    func append(_ v: Double) { values.withLock { $0.append(v) } }
    var all: [Double] { values.withLock { $0 } }
}

final class SharedCounter: Sendable {
    private let value = Atomic<Int>(0)
    private let gapCount = Atomic<Int>(0)
    func add(_ n: Int = 1) { value.add(n, ordering: .relaxed) }
    func gap() { gapCount.add(1, ordering: .relaxed) }
    var count: Int { value.load(ordering: .relaxed) }
    var gaps: Int { gapCount.load(ordering: .relaxed) }
}

/// earshotd as a child process with a file source, bound to free loopback ports.
final class DaemonProcess {
    /// The release earshotd built next to this benchmark.
    static func releaseBinary() throws -> String {
        let path = (Machine.executablePath() as NSString).deletingLastPathComponent + "/earshotd"
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw BenchError("\(path) missing: build it with `swift build -c release --product earshotd` (benchmarks/run.sh does)")
        }
        return path
    }

    /// A fresh state folder holding `catalog` as its only catalog (none when nil).
    static func stateFolder(in workDirectory: String, named name: String, catalog: String?) throws -> String {
        let state = "\(workDirectory)/\(name)"
        try FileManager.default.createDirectory(atPath: "\(state)/catalogs", withIntermediateDirectories: true)
        if let catalog { try FileManager.default.copyItem(atPath: catalog, toPath: "\(state)/catalogs/corpus.earcat") }
        return state
    }

    /// Writes `<state>/clients.allow`: one "<public key> <name> <role>" line per client.
    static func writeAllowList(state: String, _ clients: [(keys: CurveKeyPair, name: String, role: String)]) throws {
        try AtomicFile.write(Array(clients.map { "\($0.keys.publicKey) \($0.name) \($0.role)\n" }.joined().utf8),
                             to: "\(state)/clients.allow")
    }

    /// The daemon's CURVE public key, from the `<state>/server.public` it writes at start.
    static func serverPublicKey(state: String) throws -> String {
        try String(contentsOfFile: "\(state)/server.public", encoding: .utf8)
            .split(separator: "\n").first { !$0.hasPrefix("#") && !$0.isEmpty }.map(String.init) ?? ""
    }

    /// A client configuration with CURVE on, as `keys`, for the daemon of `state`.
    static func curveConfiguration(state: String, keys: CurveKeyPair) throws -> RpcClient.Configuration {
        var configuration = RpcClient.Configuration()
        configuration.security = ClientSecurity(serverPublicKey: try serverPublicKey(state: state), keyPair: keys)
        return configuration
    }

    let process = Process()
    let log: String
    private(set) var rpc = ""
    private(set) var events = ""
    var pid: Int32 { process.processIdentifier }

    /// With `fileLimit`, the daemon gets that many descriptors at most (soft and hard, through
    /// prlimit, which execs it: the pid is the daemon's). With `launcher`, that program (and its
    /// arguments) is run with the daemon's path and arguments after them, and must exec it so the
    /// pid stays the daemon's (the board benchmark's shell that enters cgroups first).
    /// `startTimeout`: seconds to wait for the "listening on" line (a daemon on a small CPU budget
    /// with a big catalog takes longer).
    init(path: String, state: String, programme: String, settings: [String], fileLimit: Int? = nil,
         launcher: [String] = [], startTimeout: Double = 20, log logPath: String? = nil) throws {
        log = logPath ?? "\(state)/../earshotd-\(UUID().uuidString.prefix(8)).log"
        FileManager.default.createFile(atPath: log, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        var command = (fileLimit.map { ["/usr/bin/prlimit", "--nofile=\($0):\($0)"] } ?? []) + [path]
        if !launcher.isEmpty { command = launcher + command }
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst()) + ["--daemon.state_directory=\(state)", "--audio.source=file", "--audio.file=\(programme)",
                             "--rpc.listen=tcp://127.0.0.1:0", "--events.listen=tcp://127.0.0.1:0"] + settings
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        let deadline = Clock.now() + startTimeout
        while Clock.now() < deadline {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first(where: { $0.contains("listening on") }) {
                let words = line.split(separator: " ").map(String.init)
                if let a = words.firstIndex(of: "RPC"), let b = words.firstIndex(of: "events") {
                    rpc = words[a + 1].trimmingCharacters(in: CharacterSet(charactersIn: ";"))
                    events = words[b + 1]
                    return
                }
            }
            guard process.isRunning else {
                throw BenchError("earshotd exited (\(Self.describeExit(process))): \(text)")
            }
            usleep(20_000)
        }
        process.terminate()
        process.waitUntilExit()
        throw BenchError("earshotd did not start within \(Int(startTimeout)) s; the end of its log (\(log)):\n" + Self.tail(of: log))
    }

    /// "status 1" or "killed by signal 9".
    static func describeExit(_ process: Process) -> String {
        process.terminationReason == .uncaughtSignal ? "killed by signal \(process.terminationStatus)" : "status \(process.terminationStatus)"
    }

    /// The last `lines` lines of a log file, indented.
    static func tail(of path: String, lines: Int = 15) -> String {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        let last = text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines + 1)
        return last.map { "    " + $0 }.joined(separator: "\n")
    }

    /// Descriptors the daemon has open now.
    var openDescriptors: Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? 0 }

    var residentMegabytes: Double { ProcStatus.megabytes("VmRSS", pid: pid) ?? 0 }

    /// User + system CPU seconds of the daemon, from /proc.
    func cpuSeconds() -> Double {
        guard let stat = ProcStatus.read("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the command: state is field 3, utime 14 and stime 15 (1-based), i.e. 11 and 12 here.
        guard fields.count > 12, let u = Double(fields[11]), let s = Double(fields[12]) else { return 0 }
        return (u + s) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    /// SIGTERM, then SIGKILL when the daemon has not exited within `grace` seconds (one starved of
    /// CPU or memory may never finish its graceful stop).
    func stop(grace: Double) {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = Clock.now() + grace
        while process.isRunning, Clock.now() < deadline { usleep(20_000) }
        if process.isRunning {
            say("  earshotd (pid \(pid)) did not stop within \(Int(grace)) s of SIGTERM: SIGKILL")
            kill(pid, SIGKILL)
        }
        process.waitUntilExit()
    }
}

extension Report {
    static func daemonSection(_ env: RunEnvironment, _ r: DaemonReport) -> String {
        func ms(_ v: [Double], _ p: Double) -> String { Fmt.f(Stats.percentile(v, p), 2) }
        var s = "## Daemon: RPC and events over ZeroMQ on loopback\n\n" + runLine(env) + "\n\n"
        s += "`earshotd` (release) as a child process with the corpus catalog (\(Fmt.f(r.catalogMB)) MB) and a corpus file played in real "
            + "time as the programme; clients are `RpcClient`/`EventSubscriber` in the benchmark process (same 2 cores). "
            + "Match requests find the session prepared (≥ 3 s heard). Runs use `security.mode = none` except the CURVE rows (CURVE is the default), whose clients each have their own key as on a real LAN: in plain mode all connections from one address are one client, whose calls in flight are capped at 64 (hostile-LAN limits).\n\n"
        s += "| measure | result | target | |\n|---|---|---|---|\n"
        let p50 = Stats.percentile(r.sequential, 50) ?? .infinity, p99 = Stats.percentile(r.sequential, 99) ?? .infinity
        s += "| `Match` round trip, one client (\(r.sequential.count) calls) | p50 \(ms(r.sequential, 50)) ms, p99 \(ms(r.sequential, 99)) ms; wrong item \(r.sequentialWrong) | p50 ≤ 20 ms, p99 ≤ 50 ms | \(Fmt.passFail(p50 <= 20 && p99 <= 50)) |\n"
        let m = r.steady
        if m.calls > 0 {
            let at = m.noMatchAt.map { Fmt.f($0.programme, 2) }.joined(separator: ", ")
            s += "| `Match` on a prepared box, \(m.calls) calls back to back (50 ms apart) as shipped (following on), a clean \(Fmt.f(m.programmeSeconds)) s programme looped | \(m.matches) MATCH, \(m.noMatch) NO_MATCH\(at.isEmpty ? "" : " (windows ending at programme s \(at))"), \(m.otherItem) another item, \(m.errors) errors; p50 \(ms(m.latencies, 50)) ms, p99 \(ms(m.latencies, 99)) ms | every call MATCH | \(Fmt.passFail(m.matches == m.calls)) |\n"
        }
        if !r.curveSequential.isEmpty {
            let added = (Stats.percentile(r.curveSequential, 99) ?? .infinity) - p99
            s += "| `Match` round trip with CURVE (the default; \(r.curveSequential.count) calls) | p50 \(ms(r.curveSequential, 50)) ms, p99 \(ms(r.curveSequential, 99)) ms: CURVE adds \(Fmt.f(added, 2)) ms to p99 | ≤ 5 ms added | \(Fmt.passFail(added <= 5)) |\n"
        }
        let c99 = Stats.percentile(r.concurrent, 99) ?? .infinity
        s += "| \(r.concurrentClients) concurrent clients, each its own CURVE key (100 connections on one client I/O thread), connected, × 10 `Match` | \(r.concurrentErrors) errors; p50 \(ms(r.concurrent, 50)) ms, p99 \(ms(r.concurrent, 99)) ms | no errors, p99 ≤ 100 ms | \(Fmt.passFail(r.concurrentErrors == 0 && c99 <= 100)) |\n"
        let overflows = r.connectOverflows.map { "\($0) listen-queue drops on the machine meanwhile (the queue is \(ConnectionLimiter.listenBacklog) deep; a dropped SYN is sent again a second later)" } ?? "listen queue overflows not readable"
        s += "| the same \(r.concurrentClients) clients connecting at once: the first call (TCP connect, CURVE handshake, Health check) | \(r.concurrentClients - r.connectFailures) of \(r.concurrentClients) connected; p50 \(ms(r.connectBurst, 50)) ms, p99 \(ms(r.connectBurst, 99)) ms from the first connect; \(overflows) | (measured, no target) | |\n"
        let e99 = Stats.percentile(r.matchEventLatency, 99) ?? .infinity
        s += "| match event reaches a subscriber after the result is made (\(r.matchEventLatency.count) events; wall clock, same machine) | p50 \(ms(r.matchEventLatency, 50)) ms, p99 \(ms(r.matchEventLatency, 99)) ms, max \(Fmt.f(r.matchEventLatency.max(), 2)) ms | ≤ 10 ms | \(Fmt.passFail(e99 <= 10)) |\n"
        let worst = r.loadReceived.min() ?? 0
        let lossFree = r.loadGaps.allSatisfy { $0 == 0 } && Double(worst) >= 0.98 * Double(r.loadExpected)
        s += "| \(r.loadRate) events/s for \(Fmt.f(r.loadSeconds)) s to 10 subscribers, with an 11th that never reads | each received \(worst)–\(r.loadReceived.max() ?? 0) of ≈\(r.loadExpected); seq gaps \(r.loadGaps.reduce(0, +)) | sustained, no loss | \(Fmt.passFail(lossFree)) |\n"
        let l99 = Stats.percentile(r.matchDuringLoad, 99) ?? .infinity
        s += "| `Match` round trip during that load (\(r.matchDuringLoad.count) calls) | p50 \(ms(r.matchDuringLoad, 50)) ms, p99 \(ms(r.matchDuringLoad, 99)) ms | the daemon does not slow down (p99 ≤ 50 ms) | \(Fmt.passFail(l99 <= 50)) |\n"
        s += String(format: "| daemon CPU while prerecording (follow off) | %.2f %% of one core | ≤ 3 %% | %@ |\n", r.idleCPUPercent, Fmt.passFail(r.idleCPUPercent <= 3) as NSString)
        s += String(format: "| daemon memory while prerecording | RSS %.1f MB: %.1f MB file-backed (binary, libraries, catalog pages touched), %.1f MB anonymous | ≤ 25 MB beyond mapped catalogs | %@ |\n",
                    r.rssMB, r.rssFileMB, r.rssAnonMB, Fmt.passFail(r.rssAnonMB <= 25) as NSString)
        return s
    }
}
