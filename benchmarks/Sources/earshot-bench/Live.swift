import CMallocCounter
import EarshotAudio
import EarshotCore
import EarshotLive
import EarshotStore
import EarshotSync
import EarshotTestSupport
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The live-listening benchmark: prepared `result()` latency, audio needed without
/// `prepare()`, drift of `predictedCurrentMatchOffset`, and the cost of prerecording.
///
/// Programme audio comes from corpus files written as WAV and played by `PacedFileAudioSource`
/// in real time (there is no sound card here; the ALSA path itself is covered by the tests).
struct LiveReport {
    struct Latency {
        var milliseconds: [Double] = []
        var correct = 0
        var calls: Int { milliseconds.count }
    }

    struct AudioNeeded {
        var condition: Condition
        var seconds: [Double] = []
        var queries = 0
    }

    struct Drift {
        var name: String
        var errorsMilliseconds: [Double] = []
        var failures: [String] = []
    }

    var latency = Latency()
    var audioNeeded: [AudioNeeded] = []
    var drift: [Drift] = []
    var prerecordSeconds = 0.0
    var cpuPercent = 0.0
    var rssGrowthMB = 0.0
    var anonGrowthMB = 0.0
    var periods = 0
    var allocationsWhilePrerecording = 0
}

/// A value set on one thread and read on another.
final class SharedValue<T: Sendable>: Sendable {
    private let value: Locked<T>
    init(_ initial: T) { value = Locked(initial) }
    func set(_ v: T) { value.withLock { $0 = v } }
    func get() -> T { value.withLock { $0 } }
    func update(_ body: (inout T) -> Void) { value.withLock { body(&$0) } }
}

enum LiveBenchmark {
    static func run(options: Options, prepared p: Prepared, workDirectory: String) throws -> LiveReport {
        var report = LiveReport()
        let catalog = try MappedCatalog(contentsOf: p.catalogPath)
        // Long catalog files make the programmes (the first files over 3 minutes, by seed order).
        let programmes = p.catalogFiles.filter { p.corpus.files[$0].duration > 180 }.prefix(3)
        guard programmes.count == 3 else { throw BenchError("live benchmark needs 3 catalog files over 3 minutes") }

        try prerecordingCost(catalog: catalog, p, programmes.first!, workDirectory, &report)
        try preparedLatency(catalog: catalog, p, Array(programmes), workDirectory, options, &report)
        try audioNeeded(catalog: catalog, p, options, workDirectory, &report)
        try drift(catalog: catalog, p, Array(programmes), workDirectory, options, &report)
        return report
    }

    // MARK: Prerecording cost

    /// CPU, memory and allocations of a session prerecording real-time audio for 20 s.
    static func prerecordingCost(catalog: MappedCatalog, _ p: Prepared, _ file: Int, _ work: String, _ r: inout LiveReport) throws {
        let wav = try programmeWAV(p, file, start: 30, seconds: 60, speed: 1, work)
        let rss0 = ProcStatus.megabytes("VmRSS") ?? 0, anon0 = ProcStatus.megabytes("RssAnon") ?? 0
        let session = ManagedSession(catalog: catalog, staysPrepared: true) { try! PacedFileAudioSource(path: wav) }
        defer { session.shutdown() }
        session.prepare()
        // Warm-up: the window fills and every buffer reaches its working size.
        Thread.sleep(forTimeInterval: 14)
        let seconds = 20.0
        let cpu0 = processCPU(), heard0 = session.status.heard, allocations0 = malloc_counter_total()
        Thread.sleep(forTimeInterval: seconds)
        let cpu1 = processCPU(), heard1 = session.status.heard, allocations1 = malloc_counter_total()
        r.prerecordSeconds = heard1 - heard0
        r.cpuPercent = 100 * (cpu1 - cpu0) / seconds
        r.rssGrowthMB = (ProcStatus.megabytes("VmRSS") ?? 0) - rss0
        r.anonGrowthMB = (ProcStatus.megabytes("RssAnon") ?? 0) - anon0
        r.periods = Int(r.prerecordSeconds / 0.02)
        r.allocationsWhilePrerecording = Int(allocations1 - allocations0)
        say(String(format: "prerecording: %.1f s heard in %.0f s; CPU %.2f %% of one core; RSS +%.1f MB (anonymous +%.1f MB); "
                   + "%d allocations in the process over %d audio periods (20 ms)",
                   r.prerecordSeconds, seconds, r.cpuPercent, r.rssGrowthMB, r.anonGrowthMB, r.allocationsWhilePrerecording, r.periods))
    }

    // MARK: Prepared latency

    static func preparedLatency(catalog: MappedCatalog, _ p: Prepared, _ files: [Int], _ work: String, _ options: Options,
                                _ r: inout LiveReport) throws {
        let callsPerProgramme = options.quick ? 30 : 100
        for file in files {
            let id = p.corpus.files[file].id
            let wav = try programmeWAV(p, file, start: 60, seconds: 30, speed: 1, work)
            let session = ManagedSession(catalog: catalog, staysPrepared: true) { try! PacedFileAudioSource(path: wav) }
            defer { session.shutdown() }
            session.prepare()
            // "≥ 3 s already heard".
            while session.status.heard < 3.2 { Thread.sleep(forTimeInterval: 0.01) }
            for _ in 0..<callsPerProgramme {
                let t = Clock.now()
                let result = blocking { await session.result() }
                r.latency.milliseconds.append((Clock.now() - t) * 1000)
                if result.mediaItems.first?.mediaItem.id == id { r.latency.correct += 1 }
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
        say(String(format: "prepared result(): %d calls, p50 %.2f ms, p99 %.2f ms, max %.2f ms; right item %d/%d",
                   r.latency.calls, Stats.percentile(r.latency.milliseconds, 50)!, Stats.percentile(r.latency.milliseconds, 99)!,
                   r.latency.milliseconds.max()!, r.latency.correct, r.latency.calls))
    }

    // MARK: Audio needed without prepare()

    /// Feeds each 12 s query to a rolling window and attempts on the managed session's schedule
    /// (first at the catalog's minimum duration, then every second): the window length at the
    /// first right answer is the audio a cold `result()` needs.
    static func audioNeeded(catalog: MappedCatalog, _ p: Prepared, _ options: Options, _ work: String, _ r: inout LiveReport) throws {
        let matcher = Matcher(catalog: catalog)
        let maker = QueryMaker(workDirectory: work)
        let count = options.quick ? 20 : 50
        let plans = Preparation.positivePlans(p, count: count, seed: options.seed)
        for key in ["clean10", "noise0", "speed+4"] {
            var c = Condition.all.first { $0.key == key }!
            c.length = catalog.maximumQuerySignatureDuration
            var entry = LiveReport.AudioNeeded(condition: c)
            for (qi, plan) in plans.enumerated() {
                let recording = p.recordings[plan.source]
                let audio = try maker.make(c, from: recording, plan: plan, seed: deriveSeed(options.seed, 0x11FE, UInt64(qi)))
                let window = RollingFingerprint(capacity: catalog.maximumQuerySignatureDuration)
                var fed = 0
                var attemptAt = catalog.minimumQuerySignatureDuration
                entry.queries += 1
                while fed < audio.count {
                    let upTo = min(audio.count, Int(attemptAt * FingerprintParameters.sampleRate))
                    audio[fed..<upTo].withUnsafeBufferPointer { window.append($0) }
                    fed = upTo
                    if let (signature, _) = try? window.signature(),
                        let top = matcher.match(signature).mediaItems.first, top.mediaItem.id == recording.id,
                        abs(top.matchOffset - plan.start) <= RecognitionBenchmark.offsetTolerance
                    {
                        entry.seconds.append(window.windowDuration)
                        break
                    }
                    attemptAt += 1
                }
            }
            say(String(format: "audio needed without prepare(), %@: median %@ s, p90 %@ s; matched within %.0f s: %d/%d",
                       c.name as NSString, Fmt.f(Stats.median(entry.seconds)) as NSString,
                       Fmt.f(Stats.percentile(entry.seconds, 90)) as NSString, c.length, entry.seconds.count, entry.queries))
            r.audioNeeded.append(entry)
        }
    }

    // MARK: Drift of the predicted offset

    /// Two ways a client follows a programme, on each of 3 programmes at unchanged speed and
    /// +4 %: one `result()` shortly after playback starts and then only the clock (the session's
    /// status moves `predictedCurrentMatchOffset` on by wall-clock time and the measured speed),
    /// and a running `results()` sequence that re-matches every second. After 60 s the status's
    /// predicted offset is compared with where the paced source really is.
    static func drift(catalog: MappedCatalog, _ p: Prepared, _ files: [Int], _ work: String, _ options: Options,
                      _ r: inout LiveReport) throws {
        let wait = options.quick ? 20.0 : 60.0
        struct Run {
            var name: String
            var programme: Int
            var continuous: Bool
            var session: ManagedSession
            var start: Double
            var speed: Double
            /// When the paced source began playing.
            var started: SharedValue<Double>
            /// Position where the source is at `Clock.now()`.
            func truth() -> Double { start + (Clock.now() - started.get()) * speed }
        }
        var runs: [Run] = []
        for (k, file) in files.enumerated() {
            for speed in [1.0, 1.04] {
                for continuous in [false, true] {
                    let start = 40.0 + Double(k) * 20
                    let wav = try programmeWAV(p, file, start: start, seconds: wait + 20, speed: speed, work)
                    let started = SharedValue(0.0)
                    let session = ManagedSession(catalog: catalog, staysPrepared: true) {
                        let source = try! PacedFileAudioSource(path: wav)
                        started.set(Clock.now())
                        return source
                    }
                    let name = (speed == 1 ? "unchanged speed" : "speed +4 %") + (continuous ? ", `results()` running" : ", one `result()` then the clock only")
                    runs.append(Run(name: name, programme: k, continuous: continuous, session: session, start: start,
                                    speed: speed, started: started))
                }
            }
        }
        for run in runs { run.session.prepare() }
        Thread.sleep(forTimeInterval: 6)
        var atMatch: [Double?] = []
        for run in runs {
            if run.continuous {
                let session = run.session
                Task.detached { for await _ in session.results() {} }
                atMatch.append(nil)
            } else {
                let result = blocking { await run.session.result() }
                atMatch.append(result.mediaItems.isEmpty ? nil : run.session.status.currentMatch.map {
                    ($0.predictedCurrentMatchOffset - run.truth()) * 1000
                })
            }
        }
        Thread.sleep(forTimeInterval: wait)
        var byName: [String: LiveReport.Drift] = [:]
        var order: [String] = []
        for (k, run) in runs.enumerated() {
            let status = run.session.status
            let truth = run.truth()
            if byName[run.name] == nil { order.append(run.name) }
            var d = byName[run.name] ?? LiveReport.Drift(name: run.name)
            if let item = status.currentMatch, run.continuous || atMatch[k] != nil {
                let error = (item.predictedCurrentMatchOffset - truth) * 1000
                d.errorsMilliseconds.append(abs(error))
                if let initial = atMatch[k], abs(initial) > 100 {
                    d.failures.append(String(format: "programme %d matched %.1f s away (another repeat of the same music) and kept that error", run.programme + 1, initial / 1000))
                }
            } else {
                d.failures.append("programme \(run.programme + 1): no match")
            }
            byName[run.name] = d
            run.session.shutdown()
        }
        r.drift = order.compactMap { byName[$0] }
        for d in r.drift {
            say(String(format: "predicted offset after %.0f s, %@: errors %@ ms%@", wait, d.name as NSString,
                       d.errorsMilliseconds.map { String(format: "%.1f", $0) }.joined(separator: ", ") as NSString,
                       (d.failures.isEmpty ? "" : "; " + d.failures.joined(separator: ", ")) as NSString))
        }
    }

    // MARK: Helpers

    /// `seconds` of corpus file `file` from `start`, played `speed`× fast (pitch and tempo), as a
    /// 16 kHz WAV in the work folder.
    static func programmeWAV(_ p: Prepared, _ file: Int, start: Double, seconds: Double, speed: Double, _ work: String) throws -> String {
        let x = p.corpus.files[file].samples
        let sr = FingerprintParameters.sampleRate
        let lo = Int(start * sr), hi = min(x.count, lo + Int(seconds * speed * sr))
        var audio = Array(x[lo..<hi])
        if speed != 1 { audio = Degradations.changeSpeed(audio, by: speed) }
        let path = "\(work)/programme-\(file)-\(Int(start))-\(Int(speed * 100)).wav"
        try WAV.write(audio, sampleRate: Int(sr), to: path)
        return path
    }

    /// Process CPU seconds (all threads).
    static func processCPU() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) * 1e-6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) * 1e-6
    }

    /// Runs async work from synchronous benchmark code and waits for it.
    static func blocking<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
        let box = SharedValue<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            box.set(await body())
            done.signal()
        }
        done.wait()
        return box.get()!
    }
}

extension Report {
    static func liveSection(_ env: RunEnvironment, _ r: LiveReport) -> String {
        func ms(_ v: Double?) -> String { Fmt.f(v, 2) }
        var s = "## Live listening (managed session)\n\n" + runLine(env) + "\n\n"
        s += "Programme audio: catalog files written as 16 kHz WAV and played in real time by `PacedFileAudioSource` "
            + "(no sound card on this machine; the ALSA path is exercised by the tests through ALSA's file PCM). "
            + "Catalog as in Conditions, memory-mapped. One process; wall clock.\n\n"
        let l = r.latency
        s += "| measure | result | target | |\n|---|---|---|---|\n"
        let p50 = Stats.percentile(l.milliseconds, 50), p99 = Stats.percentile(l.milliseconds, 99)
        s += "| prepared `result()` with ≥ 3 s heard (\(l.calls) calls over 3 programmes, `staysPrepared`) | p50 \(ms(p50)) ms, p99 \(ms(p99)) ms; right item \(l.correct)/\(l.calls) | p50 ≤ 5 ms, p99 ≤ 20 ms | \(Fmt.passFail(p50.map { $0 <= 5 } ?? false && (p99 ?? .infinity) <= 20)) |\n"
        for d in r.drift {
            let worst = d.errorsMilliseconds.max()
            let ok = d.failures.isEmpty && (worst ?? .infinity) <= 50
            s += "| `predictedCurrentMatchOffset` error after 60 s, \(d.name) (\(d.errorsMilliseconds.count) programmes) | worst \(Fmt.f(worst)) ms (\(d.errorsMilliseconds.map { Fmt.f($0) }.joined(separator: ", ")))\(d.failures.isEmpty ? "" : "; " + d.failures.joined(separator: ", ")) | ≤ 50 ms | \(Fmt.passFail(ok)) |\n"
        }
        s += String(format: "| CPU while prerecording (whole process: paced file source + session thread, %.0f s) | %.2f %% of one core | ≤ 3 %% | %@ |\n",
                    r.prerecordSeconds, r.cpuPercent, Fmt.passFail(r.cpuPercent <= 3) as NSString)
        s += String(format: "| memory growth from creating and running a prerecording session | RSS +%.1f MB (anonymous +%.1f MB) | ≤ 20 MB beyond the mapped catalog | %@ |\n",
                    r.rssGrowthMB, r.anonGrowthMB, Fmt.passFail(r.anonGrowthMB <= 20) as NSString)
        s += String(format: "| heap allocations while prerecording (whole process, counted by interposing malloc) | %d over %d audio periods of 20 ms (%.3f per period) | 0 per period | %@ |\n",
                    r.allocationsWhilePrerecording, r.periods, Double(r.allocationsWhilePrerecording) / Double(max(1, r.periods)),
                    Fmt.passFail(r.allocationsWhilePrerecording == 0) as NSString)
        s += "\n### Audio needed without `prepare()`\n\n"
        s += "Each query (50 per condition, the recognition benchmark's positions) is fed to a rolling window and matched on the "
            + "managed session's schedule: first at the catalog's minimum query duration, then after every further second. "
            + "The number is the window length at the first right answer (item and offset within 0.1 s).\n\n"
        s += "| condition | median | p90 | matched within 12 s |\n|---|---|---|---|\n"
        for a in r.audioNeeded {
            s += "| \(a.condition.name.replacingOccurrences(of: "10 s", with: "12 s")) | \(Fmt.f(Stats.median(a.seconds))) s | \(Fmt.f(Stats.percentile(a.seconds, 90))) s | \(a.seconds.count)/\(a.queries) |\n"
        }
        return s
    }
}
