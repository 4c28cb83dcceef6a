import EarshotAudio
import EarshotCore
import EarshotLive
import EarshotTestSupport
import Foundation

/// The cue benchmark: a 10-minute programme with 60 cues, its audio run through a real
/// `ManagedSession` (file source read as fast as it decodes, so stream time is the clock), the
/// session's continuous results fed to a `CueMonitor` as the daemon feeds it, and every fired
/// cue compared with the moment the programme truly crossed it.
///
/// Timing model: a result for the window ending at stream time t reaches the monitor at
/// t + L, where L is this machine's p99 time for an attempt (window match + tail match,
/// measured here); deadlines fire exactly (an ideal timer; the daemon's timer adds its own
/// scheduling delay, which the end-to-end test bounds).
struct CueReport {
    struct Run {
        var name: String
        var expected = 0
        var startedOnce = 0
        var missing: [String] = []
        var duplicates = 0
        var outOfOrder = 0
        var unexpected: [String] = []
        var errorsMilliseconds: [Double] = []
        var skipped = 0
        var expectedSkipped = 0
        var owed = 0
        var seeks: [(cut: Double, resync: Double?, firstCueDelay: Double?, firstCueError: Double?)] = []
        var lostEvents = 0
        var firedWhileLost = 0
        var audioSeconds = 0.0
        var observations = 0
        var monitorSeconds = 0.0
        var sessionCPUSeconds = 0.0
    }
    var runs: [Run] = []
    var attemptLatencyP99 = 0.0
    var attemptLatencyP50 = 0.0
    var programmeFiles: [String] = []
    var cueCount = 0
}

enum CueBenchmark {
    /// A stretch of the programme as played: stream time `at`, reference position `from`, for `seconds`.
    struct Segment {
        var at: Double
        var from: Double
        var seconds: Double
    }

    static let programmeSeconds = 600.0

    static func run(options: Options, prepared p: Prepared, workDirectory work: String) throws -> CueReport {
        var report = CueReport()
        // The programme: catalog files back to back up to 10 minutes (a show with music).
        var programme: [Float] = []
        for f in p.catalogFiles where programme.count < Int(programmeSeconds * 16_000) {
            programme += p.corpus.files[f].samples
            report.programmeFiles.append(p.corpus.files[f].name)
        }
        guard programme.count >= Int(programmeSeconds * 16_000) else { throw BenchError("cue benchmark needs 10 min of catalog audio") }
        programme = Array(programme[..<Int(programmeSeconds * 16_000)])
        let cues = makeCues()
        report.cueCount = cues.count
        var catalog = CustomCatalog()
        try catalog.addReferenceSignature(SyntheticSignature.of(programme), representing: [MediaItem(id: "programme", title: "Programme")],
                                          cues: cues)
        // The other corpus files as distractors.
        for f in p.catalogFiles where !report.programmeFiles.contains(p.corpus.files[f].name) {
            try catalog.addReferenceSignature(p.signatures[p.catalogFiles.firstIndex(of: f)!],
                                              representing: [MediaItem(id: p.corpus.files[f].name)])
        }
        let mapped = try MappedCatalog(bytes: try catalog.dataRepresentation())
        let set = CatalogSet([.init(name: "bench", version: 1, catalog: mapped)])
        let schedule = mapped.cues(ofReference: 0)

        (report.attemptLatencyP50, report.attemptLatencyP99) = attemptLatency(set, programme)
        say(String(format: "cues: programme of %d files, %d cues; attempt latency p50 %.2f ms, p99 %.2f ms",
                   report.programmeFiles.count, cues.count, report.attemptLatencyP50 * 1000, report.attemptLatencyP99 * 1000))

        let whole = [Segment(at: 0, from: 0, seconds: 600)]
        let fast = [Segment(at: 0, from: 0, seconds: 600 / 1.04)]
        let seeks = [Segment(at: 0, from: 0, seconds: 200), Segment(at: 200, from: 320, seconds: 100), Segment(at: 300, from: 300, seconds: 100)]
        let gap = [Segment(at: 0, from: 0, seconds: 150), Segment(at: 180, from: 180, seconds: 120)]
        let other = p.heldOutFiles.first.map { Array(p.corpus.files[$0].samples.prefix(30 * 16_000)) }
        // (name, speed, noise SNR dB, attempt interval s, what plays, what plays in the gaps). The
        // session reads an unpaced file a second of audio per turn, so intervals under 1 s would
        // not show here as they do with a live source.
        let plans: [(String, Double, Double, Double, [Segment], [Float]?)] = [
            ("1.00, no noise", 1.0, .infinity, 1, whole, nil),
            ("1.00, noise 15 dB", 1.0, 15, 1, whole, nil),
            ("1.04 (PAL speed-up), noise 15 dB", 1.04, 15, 1, fast, nil),
            ("1.00, noise 5 dB", 1.0, 5, 1, whole, nil),
            ("1.04, noise 5 dB", 1.04, 5, 1, fast, nil),
            ("seeks, noise 15 dB", 1.0, 15, 1, seeks, nil),
            ("seeks, noise 5 dB", 1.0, 5, 1, seeks, nil),
            ("lost, noise 15 dB", 1.0, 15, 1, gap, other),
        ]
        for (name, rate, noise, interval, segments, interlude) in plans {
            var audio: [Float] = []
            var played: [Segment] = []
            for (k, s) in segments.enumerated() {
                if k > 0, let interlude, played.last.map({ $0.at + $0.seconds }) != s.at {
                    audio += interlude  // the gap in stream time is the interlude
                }
                let lo = Int(s.from * 16_000), hi = min(programme.count, lo + Int(s.seconds * rate * 16_000))
                var piece = Array(programme[lo..<hi])
                if rate != 1 { piece = Degradations.changeSpeed(piece, by: rate) }
                played.append(Segment(at: Double(audio.count) / 16_000, from: s.from, seconds: Double(piece.count) / 16_000))
                audio += piece
            }
            if noise.isFinite { audio = Degradations.addWhiteNoise(audio, snr: noise, seed: 14) }
            let path = "\(work)/cue-programme-\(report.runs.count).wav"
            try WAV.write(audio, sampleRate: 16_000, to: path)
            let run = try measure(name: name, path: path, rate: rate, played: played, schedule: schedule, set: set,
                                  latency: report.attemptLatencyP99, audioSeconds: Double(audio.count) / 16_000, interval: interval)
            report.runs.append(run)
            say(String(format: "  %@: %d/%d started once, p95 %.1f ms, max %.1f ms, missing %d, duplicates %d, unexpected %d",
                       name as NSString, run.startedOnce, run.expected, Stats.percentile(run.errorsMilliseconds, 95) ?? -1,
                       run.errorsMilliseconds.max() ?? -1, run.missing.count, run.duplicates, run.unexpected.count))
        }
        return report
    }

    /// 60 cues over 10 minutes: every 10 s with a jitter, points and 3 s ranges, some JUMP-restricted,
    /// one ONCE, a PRE and a POST.
    static func makeCues() -> [Cue] {
        var random = SeededRandom(seed: 1414)
        var cues: [Cue] = []
        for i in 0..<58 {
            let start = 8 + Double(i) * 10 + Double(random.next() % 4000) / 1000
            let range = i % 3 == 1
            cues.append(Cue(id: String(format: "c%02d", i), cueClass: i % 5 == 0 ? Cue.interstitialClass : "com.example.card",
                            start: start, duration: range ? 3 : nil,
                            assetURI: i % 5 == 0 ? "https://example.com/ad\(i).m3u8" : nil,
                            restrictions: i % 7 == 3 ? [.jump] : [], flags: i == 30 ? [.once] : []))
        }
        cues.append(Cue(id: "pre", start: 0, flags: [.pre]))
        cues.append(Cue(id: "post", start: 0, flags: [.post]))
        return cues
    }

    /// p50/p99 seconds of one attempt while following: a 12 s window match plus a 2 s tail match.
    static func attemptLatency(_ set: CatalogSet, _ programme: [Float]) -> (Double, Double) {
        let matcher = CatalogSetMatcher(set)
        var times: [Double] = []
        for k in 0..<60 {
            let start = 20 + Double(k) * 9
            guard let window = try? SyntheticSignature.of(SyntheticSignature.excerpt(programme, start: start, duration: 12)),
                  let tail = try? SyntheticSignature.of(SyntheticSignature.excerpt(programme, start: start + 10, duration: 2))
            else { continue }
            let t0 = Clock.now()
            _ = matcher.match(window)
            _ = matcher.match(tail)
            times.append(Clock.now() - t0)
        }
        return (Stats.percentile(times, 50) ?? 0, Stats.percentile(times, 99) ?? 0)
    }

    static func measure(name: String, path: String, rate: Double, played: [Segment], schedule: CueSchedule, set: CatalogSet,
                        latency: Double, audioSeconds: Double, interval: Double) throws -> CueReport.Run {
        var run = CueReport.Run(name: name)
        run.audioSeconds = audioSeconds
        // Every result of a session following the file.
        let cpu0 = LiveBenchmark.processCPU()
        let source = try FileAudioSource(path: path)
        let session = ManagedSession(catalogs: set, staysPrepared: true, attemptInterval: interval) { source }
        let results: [StreamingResult] = LiveBenchmark.blocking {
            var out: [StreamingResult] = []
            for await r in session.results() {
                out.append(r)
                if r.streamTime >= audioSeconds - 0.1 { break }
                if case .error = r.result { break }
            }
            session.shutdown()
            return out
        }
        run.sessionCPUSeconds = LiveBenchmark.processCPU() - cpu0

        // The monitor, driven as the daemon drives it.
        var monitor = CueMonitor(configuration: .init(minimumConfidence: 0.5))
        var fired: [(event: CueEvent, at: Double)] = []
        var pending = results[...]
        var steps = 0
        while steps < 1_000_000 {
            steps += 1
            let deadline = monitor.nextDeadline ?? .infinity
            let arrival = pending.first.map { $0.streamTime + latency } ?? .infinity
            if arrival.isInfinite && deadline > audioSeconds + 15 { break }
            let t0 = Clock.now()
            if arrival <= deadline, let r = pending.popFirst() {
                guard case .match(let items) = r.result, let top = items.first else { continue }
                let o = CueMonitor.Observation(
                    programme: CueProgramme(catalogName: top.catalogName, referenceIndex: top.referenceIndex, catalogVersion: top.catalogVersion),
                    position: top.predictedCurrentMatchOffset, rate: 1 + top.timeSkew, confidence: top.confidence,
                    time: r.streamTime, wallTime: 1_000_000 + r.streamTime, revealsJump: r.revealsJump, isStale: r.isStale)
                let out = monitor.observe(o, schedule: top.referenceIndex == 0 ? schedule : .empty(referenceDuration: 600))
                    + monitor.advance(to: arrival)
                run.observations += 1
                run.monitorSeconds += Clock.now() - t0
                fired += out.map { ($0, arrival) }
            } else {
                let out = monitor.advance(to: deadline)
                run.monitorSeconds += Clock.now() - t0
                fired += out.map { ($0, deadline) }
            }
        }
        judge(&run, fired: fired, played: played, rate: rate, schedule: schedule)
        if ProcessInfo.processInfo.environment["EARSHOT_BENCH_CUE_TRACE"] != nil {
            // Where the programme truly was at stream time t.
            func truth(_ t: Double) -> Double? {
                played.last { $0.at <= t && t <= $0.at + $0.seconds }.map { $0.from + (t - $0.at) * rate }
            }
            for (e, at) in fired where e.kind != .upcoming && e.kind != .ended {
                say(String(format: "    trace %8.2f %@ %@ pos %.2f true %@ late %.2f%@", at, e.kind.rawValue as NSString,
                           (e.cue?.id ?? "") as NSString, e.position, truth(at).map { String(format: "%.2f", $0) } ?? "-",
                           e.lateness, e.owed ? " owed" : ""))
            }
            for r in results {
                let top = r.result.mediaItems.first
                let t = truth(r.streamTime)
                if let top, let t, abs(top.predictedCurrentMatchOffset - t) < 0.5, top.referenceIndex == 0 { continue }
                say(String(format: "    result %8.2f %@ %@ conf %.2f true %@%@", r.streamTime, top.map { "ref \($0.referenceIndex)" } ?? "no match",
                           top.map { String(format: "%.2f", $0.predictedCurrentMatchOffset) } ?? "", top?.confidence ?? 0,
                           t.map { String(format: "%.2f", $0) } ?? "-", r.revealsJump ? " JUMP" : ""))
            }
        }
        return run
    }

    /// Compares what fired with the truth of `played`.
    static func judge(_ run: inout CueReport.Run, fired: [(event: CueEvent, at: Double)], played: [Segment], rate: Double,
                      schedule: CueSchedule) {
        // Expected starts: cues whose start lies inside a played stretch (ONCE only the first time).
        var expected: [(id: String, at: Double, segment: Int)] = []
        var onceSeen = Set<String>()
        for (k, s) in played.enumerated() {
            let end = s.from + s.seconds * rate
            for cue in schedule.cues {
                let start = cue.isPost ? schedule.referenceDuration : cue.start
                if cue.isPre {
                    if k == 0 { expected.append((cue.id, -1, k)) }  // at acquisition: time not judged
                    continue
                }
                let reachesEnd = end >= schedule.referenceDuration - 0.05
                guard start > s.from, start < end - 0.05 || (cue.isPost && reachesEnd) else { continue }
                if cue.isOnce { guard onceSeen.insert(cue.id).inserted else { continue } }
                expected.append((cue.id, s.at + (start - s.from) / rate, k))
            }
        }
        run.expected = expected.count
        let starts = fired.filter { $0.event.kind == .started }
        var used = Set<Int>()
        for e in expected {
            // The start of this cue fired nearest its true time, within this stretch.
            let segmentStart = played[e.segment].at, segmentEnd = played[e.segment].at + played[e.segment].seconds + 15
            let candidates = starts.indices.filter { i in
                starts[i].event.cue?.id == e.id && !used.contains(i) && starts[i].at >= segmentStart && starts[i].at <= segmentEnd
            }
            guard let best = candidates.min(by: { abs(starts[$0].at - e.at) < abs(starts[$1].at - e.at) }) else {
                run.missing.append(e.id)
                continue
            }
            used.insert(best)
            if candidates.count > 1 { run.duplicates += candidates.count - 1 }
            run.startedOnce += candidates.count == 1 ? 1 : 0
            if e.at >= 0 { run.errorsMilliseconds.append(abs(starts[best].at - e.at) * 1000) }
        }
        run.unexpected = starts.indices.filter { !used.contains($0) }.map {
            String(format: "%@@%.1fs", (starts[$0].event.cue?.id ?? "?") as NSString, starts[$0].at)
        }
        // Order: starts sorted by fire time follow their cues' timeline within each stretch.
        var previous = -Double.infinity
        var previousSegment = -1
        for s in starts.sorted(by: { $0.at < $1.at }) {
            guard let cue = s.event.cue, !cue.isPre, !cue.isPost else { continue }
            let segment = played.lastIndex { $0.at <= s.at } ?? 0
            if segment != previousSegment { previous = -Double.infinity; previousSegment = segment }
            if cue.start < previous { run.outOfOrder += 1 }
            previous = cue.start
        }
        run.skipped = fired.filter { $0.event.kind == .skipped }.count
        run.owed = fired.filter { $0.event.kind == .skipped && $0.event.owed }.count
        run.lostEvents = fired.filter { $0.event.kind == .programmeLost }.count
        // Seeks: the cut, when the monitor jumped, and the first cue after the cut.
        for k in played.indices.dropFirst() {
            let cut = played[k].at
            let jumpedFrom = played[k - 1].from + played[k - 1].seconds * rate
            let forward = played[k].from > jumpedFrom
            run.expectedSkipped += forward ? schedule.cues.filter { !$0.isPre && !$0.isPost && $0.start > jumpedFrom && $0.start <= played[k].from }.count : 0
            let resync = fired.first { ($0.event.kind == .seek || $0.event.kind == .schedule) && $0.at > cut }?.at
            let first = expected.filter { $0.segment == k }.min { $0.at < $1.at }
            var firstError: Double?
            let stretchEnd = cut + played[k].seconds + 15
            if let first, let s = starts.first(where: { $0.event.cue?.id == first.id && $0.at >= cut && $0.at <= stretchEnd }) {
                firstError = abs(s.at - first.at)
            }
            run.seeks.append((cut, resync.map { $0 - cut }, first.map { $0.at - cut }, firstError))
            // Anything starting between the cut and the resync fired on the old timeline.
            if let resync {
                run.firedWhileLost += starts.filter { $0.at > cut + 0.001 && $0.at < resync }.count
            }
        }
    }

    static func section(_ env: RunEnvironment, _ r: CueReport) -> String {
        var out = """
            ## Cues: firing in sync with the programme

            \(Report.runLine(env))

            A 10-minute programme (\(r.programmeFiles.count) corpus files back to back, as one reference) with \(r.cueCount) cues (58 every ~10 s with up to 4 s of jitter — points and 3 s ranges, interstitials with an asset URI, every 7th JUMP-restricted, one ONCE — plus a PRE and a POST), in a catalog with the other corpus files as distractors. The programme's audio (16 kHz, with white noise at the SNR each run names, over the whole programme: quiet passages get much less) is read by a real `ManagedSession` from a file as fast as it decodes (attempts every 1 s of audio unless the run says otherwise — earshotd's `session.attempt_interval_ms` — 12 s window, tail check of 2 s). Runs: the whole programme at 1.00 and at 1.04 (resampled: pitch and tempo, as PAL speed-up); *seeks*: 0–200 s, cut to 320 s (+2 min), 100 s, back to 300 s (−2 min), 100 s; *lost*: 0–150 s, then 30 s of a held-out corpus file (another channel), then the programme again from 180 s, and its continuous results drive a `CueMonitor` (lead 5 s, hold 2.5 s, lost horizon 10 s, minimum confidence 0.5) exactly as earshotd does. A result for the window ending at stream time t reaches the monitor at t + \(Fmt.f(r.attemptLatencyP99 * 1000, 2)) ms (this machine's p99 of a window match plus a tail match; p50 \(Fmt.f(r.attemptLatencyP50 * 1000, 2)) ms); timers fire exactly on the monitor's deadlines. True time of a cue: the stream time at which the played audio crosses its start.

            | run | started exactly once | missing / duplicated / out of order / unexpected | \\|fire − true\\| p50 / p95 / max | target | | skipped (owed) | lost events |
            |---|---|---|---|---|---|---|---|

            """
        for run in r.runs {
            let p50 = Stats.percentile(run.errorsMilliseconds, 50), p95 = Stats.percentile(run.errorsMilliseconds, 95)
            let mx = run.errorsMilliseconds.max()
            let ok = run.missing.isEmpty && run.duplicates == 0 && run.outOfOrder == 0 && run.unexpected.isEmpty
                && (p95 ?? 1e9) <= 50 && (mx ?? 1e9) <= 150
            out += "| \(run.name) | \(run.startedOnce) of \(run.expected) | \(run.missing.count) / \(run.duplicates) / \(run.outOfOrder) / \(run.unexpected.count)"
                + "\(run.missing.isEmpty ? "" : " (missing " + run.missing.prefix(6).joined(separator: ", ") + ")")"
                + "\(run.unexpected.isEmpty ? "" : " (unexpected " + run.unexpected.prefix(6).joined(separator: ", ") + ")") | "
                + "\(Fmt.f(p50)) / \(Fmt.f(p95)) / \(Fmt.f(mx)) ms | p95 ≤ 50, max ≤ 150 ms, each once in order | \(Fmt.passFail(ok)) "
                + "| \(run.skipped) (\(run.owed))\(run.expectedSkipped > 0 ? " of \(run.expectedSkipped) jumped over" : "") | \(run.lostEvents) |\n"
        }
        out += "\n| run | cut at (stream s) | resynchronised after | first cue after the cut: due after / fire error | target | | cues started between cut and resync |\n|---|---|---|---|---|---|---|\n"
        for run in r.runs where !run.seeks.isEmpty {
            for s in run.seeks {
                let label = run.name
                // Resynchronised within 2 s, and the first cue after the cut fired within 2 s of the
                // cut or on time (one due sooner than any listener can tell the seek fires at the resync).
                let firstOK = s.firstCueError.map { e in (s.firstCueDelay ?? 0) + e <= 2 || e <= 0.15 } ?? false
                let ok = (s.resync ?? 1e9) <= 2 && firstOK
                out += "| \(label) | \(Fmt.f(s.cut)) | \(Fmt.f(s.resync, 2)) s | \(Fmt.f(s.firstCueDelay, 2)) s / "
                    + "\(Fmt.f(s.firstCueError.map { $0 * 1000 }, 1)) ms | resync ≤ 2 s; first cue within 2 s of the cut or on time | \(Fmt.passFail(ok)) | \(run.firedWhileLost) |\n"
            }
        }
        out += "\n| run | audio | observations | monitor time | monitor per observation | session CPU (prerecording + matching, file read at full speed) |\n|---|---|---|---|---|---|\n"
        for run in r.runs {
            out += "| \(run.name) | \(Fmt.f(run.audioSeconds)) s | \(run.observations) | \(Fmt.f(run.monitorSeconds * 1000, 2)) ms "
                + "(\(Fmt.f(100 * run.monitorSeconds / run.audioSeconds, 4)) % of a core in real time) | "
                + "\(Fmt.f(run.monitorSeconds / Double(max(1, run.observations)) * 1e6, 1)) µs | "
                + "\(Fmt.f(run.sessionCPUSeconds, 2)) s (\(Fmt.f(100 * run.sessionCPUSeconds / run.audioSeconds, 2)) % of a core in real time) |\n"
        }
        return out
    }
}
