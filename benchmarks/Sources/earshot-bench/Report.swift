import EarshotCore
import Foundation

/// What a run was made on and with.
struct RunEnvironment {
    var options: Options
    var started: Date
    var architecture = Machine.architecture
    var cores = Machine.cores
    var cpu = Machine.cpuModel
    var os = Machine.os
    var memory = Machine.memory
    var swift = Machine.swiftVersion
    var commit: String
    var loadAverage = (ProcStatus.read("/proc/loadavg") ?? "?")
        .split(separator: " ").prefix(3).joined(separator: " ")
    var corpus: Corpus?
    var negativeCorpus: Corpus?
    var prepared: Prepared?
    var recognitionPeakRSS: Double?
    var catalogCreate: CatalogCreateStats?
    var totalSeconds = 0.0

    init(options: Options, started: Date) {
        self.options = options
        self.started = started
        commit = Machine.commit(root: options.root)
    }

    var date: String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyy-MM-dd HH:mm 'UTC'"
        return f.string(from: started)
    }

    var commandLine: String {
        "earshot-bench " + CommandLine.arguments.dropFirst().joined(separator: " ")
    }

    func conditionLines() -> [String] {
        [
            "date: \(date)",
            "machine: \(architecture), \(cores) cores, \(cpu), \(memory), \(os)",
            "build: \(swift), release (-c release)",
            "commit: \(commit)",
            "load average: \(loadAverage)",
        ] + (options.command == .library ? [] : [
            "seed: \(options.seed); queries per condition: \(options.queriesPerCondition) positive, \(options.negativesPerCondition) negative",
        ])
    }
}

enum Report {
    /// The sections of RESULTS.md, in order, each between `<!-- begin:NAME -->` and `<!-- end:NAME -->`.
    /// "footprint" is the table benchmarks/footprint.sh prints, pasted by hand, and "clients" is written
    /// by benchmarks/client-rtt.sh: no earshot-bench run writes them, every run keeps them. Text outside
    /// the markers is not kept: studies live in benchmarks/studies/.
    static let sections = ["conditions", "recognition", "performance", "scale", "scale-large", "live", "daemon", "hostile", "hotload",
                           "board", "footprint", "cues", "library", "clients"]

    /// The whole RESULTS.md. Sections this run did not measure are kept from `previous`.
    static func render(env: RunEnvironment, recognition: [ConditionReport]?, scale: ScaleReport?, live: LiveReport?,
                       daemon: DaemonReport?, hostile: HostileReport?, hotload: HotloadReport? = nil, board: BoardReport? = nil,
                       cues: CueReport? = nil, library: LibraryReport? = nil,
                       previous: String?) -> String {
        var fresh: [String: String] = [:]
        if recognition != nil {
            fresh["conditions"] = conditions(env)
            fresh["recognition"] = recognitionSection(env, recognition!)
            fresh["performance"] = performance(env, recognition!)
        }
        if let scale {
            if fresh["conditions"] == nil, previousSection("conditions", previous) == nil { fresh["conditions"] = conditions(env) }
            // Beyond the default 100 hours (`--scale-hours 1000`): a section of its own beside it.
            fresh[scale.hours > 150 ? "scale-large" : "scale"] = scaleSection(env, scale)
        }
        if let live {
            if fresh["conditions"] == nil, previousSection("conditions", previous) == nil { fresh["conditions"] = conditions(env) }
            fresh["live"] = liveSection(env, live)
        }
        if let daemon {
            if fresh["conditions"] == nil, previousSection("conditions", previous) == nil { fresh["conditions"] = conditions(env) }
            fresh["daemon"] = daemonSection(env, daemon)
        }
        if let hostile {
            if fresh["conditions"] == nil, previousSection("conditions", previous) == nil { fresh["conditions"] = conditions(env) }
            fresh["hostile"] = hostileSection(env, hostile)
        }
        if let hotload {
            if fresh["conditions"] == nil, previousSection("conditions", previous) == nil { fresh["conditions"] = conditions(env) }
            fresh["hotload"] = hotloadSection(env, hotload)
        }
        if let board {
            if fresh["conditions"] == nil, previousSection("conditions", previous) == nil { fresh["conditions"] = conditions(env) }
            fresh["board"] = boardSection(env, board)
        }
        if let cues {
            if fresh["conditions"] == nil, previousSection("conditions", previous) == nil { fresh["conditions"] = conditions(env) }
            fresh["cues"] = CueBenchmark.section(env, cues)
        }
        if let library {
            // The library section carries its own conditions (it needs no corpus).
            fresh["library"] = librarySection(env, library)
        }
        var out = """
            # Earshot benchmark results

            The latest measurement of every benchmark, one section each, stamped with the date and commit it
            ran on. `benchmarks/run.sh` (earshot-bench) rewrites the sections it measures and keeps the others
            as they are; "Footprint" is the table `benchmarks/footprint.sh` prints and "Clients side by side" is
            written by `benchmarks/client-rtt.sh`. A number with a target is printed beside it, PASS or **FAIL**.
            What each number means: [README.md](README.md). Questions answered with these benchmarks, and
            what was tried and not kept: [studies/](studies/README.md).


            """
        for s in sections {
            guard let body = fresh[s] ?? previousSection(s, previous) else { continue }
            out += "<!-- begin:\(s) -->\n\(body.trimmingCharacters(in: .newlines))\n<!-- end:\(s) -->\n\n"
        }
        return out
    }

    static func previousSection(_ name: String, _ text: String?) -> String? {
        guard let text, let a = text.range(of: "<!-- begin:\(name) -->\n"),
            let b = text.range(of: "<!-- end:\(name) -->", range: a.upperBound..<text.endIndex)
        else { return nil }
        return String(text[a.upperBound..<b.lowerBound])
    }

    static func runLine(_ env: RunEnvironment) -> String {
        "_Run \(env.date), commit \(env.commit), `\(env.commandLine)`._"
    }

    static func conditions(_ env: RunEnvironment) -> String {
        var s = "## Conditions\n\n" + runLine(env) + "\n\n"
        s += "| | |\n|---|---|\n"
        s += "| machine | \(env.architecture), \(env.cores) cores, \(env.cpu), \(env.memory) |\n"
        s += "| system | \(env.os); \(env.swift); release build |\n"
        if let c = env.corpus {
            s += "| corpus | \(c.files.count) files, \(Fmt.duration(c.totalDuration)): \(c.description.replacingOccurrences(of: env.options.root + "/", with: "")) |\n"
            if !c.skipped.isEmpty { s += "| left out | \(c.skipped.count) files (too short or not decodable) |\n" }
        }
        if let p = env.prepared {
            s += "| catalog | \(p.catalogFiles.count) files, \(Fmt.duration(p.catalogDuration)), one reference per file, media item id = file stem |\n"
            s += "| held out (negatives) | \(p.heldOutFiles.map { "`\(p.corpus.files[$0].id)`" }.joined(separator: ", ")) (≈20 % of files by seed, whole groups: a file and its `_enhanced` version together) + synthetic music |\n"
            if let others = env.negativeCorpus {
                s += "| other music (negatives only) | \(others.files.count) files, \(Fmt.duration(others.totalDuration)): \(others.description); half of each condition's real negatives |\n"
            }
        }
        s += "| queries | seed \(env.options.seed); per condition \(env.options.queriesPerCondition) positive (round-robin over catalog files, start uniform ≥ 2 s from either end; the same positions in every condition) and \(env.options.negativesPerCondition) negative (same degradation) |\n"
        s += "| load average at start | \(env.loadAverage) (other work on the machine slows wall-clock numbers) |\n"
        s += "| timing | wall clock, one thread; match time is `Matcher.match` only (query fingerprinting excluded), catalog memory-mapped from a file in the page cache |\n"
        return s
    }

    static func recognitionSection(_ env: RunEnvironment, _ reports: [ConditionReport]) -> String {
        var s = "## Recognition\n\n" + runLine(env) + "\n\n"
        s += "Recall = top item is the right file and |matchOffset − true offset| ≤ 0.1 s. FP = a negative query returned any `.match` "
        s += "(the product's own threshold). Offset and skew errors are over queries whose top item was right. Skew error is "
        s += "|frequencySkew − true pitch skew| in points (1 point = 0.01). Confidence: p5/p50 over correct matches, p95/max over "
        s += "the negatives' top confidence (0 when nothing matched).\n\n"
        s += "| condition | recall | target | | wrong item / no match / offset > 0.1 s | FP | offset err p50 / p95 (ms) | skew err p50 / p95 (pt) | time-skew err p50 (pt) | match p50 / p99 (ms) | conf. true p5 / p50 | conf. neg. p95 / max |\n"
        s += "|---|---|---|---|---|---|---|---|---|---|---|---|\n"
        for r in reports {
            let c = r.condition
            if let skipped = r.skipped {
                s += "| \(c.name) | \(skipped) | \(c.target.map { "≥ \(Int($0)) %" } ?? "—") | n/a | | | | | | | | |\n"
                continue
            }
            s += "| \(c.name) | \(Fmt.pct(r.recallCount, r.positives.count)) (\(r.recallCount)/\(r.positives.count)) "
            s += "| \(c.target.map { "≥ \(Int($0)) %" } ?? "—") | \(Fmt.passFail(r.recallPass)) "
            s += "| \(r.wrongItem) / \(r.noMatch) / \(r.offsetOff) "
            s += "| \(Fmt.pct(r.falsePositives, r.negatives.count)) (\(r.falsePositives)/\(r.negatives.count)"
                + (r.sharedAudioFalsePositives > 0 ? "; \(r.sharedAudioFalsePositives) shared audio" : "") + ") "
            s += "| \(Fmt.f(Stats.percentile(r.offsetErrorsMs, 50))) / \(Fmt.f(Stats.percentile(r.offsetErrorsMs, 95))) "
            s += "| \(Fmt.f(Stats.percentile(r.skewErrors, 50), 2)) / \(Fmt.f(Stats.percentile(r.skewErrors, 95), 2)) "
            s += "| \(Fmt.f(Stats.percentile(r.timeSkewErrors, 50), 2)) "
            s += "| \(Fmt.f(Stats.percentile(r.matchTimes, 50), 2)) / \(Fmt.f(Stats.percentile(r.matchTimes, 99), 2)) "
            s += "| \(Fmt.f(Stats.percentile(r.trueConfidences, 5), 2)) / \(Fmt.f(Stats.percentile(r.trueConfidences, 50), 2)) "
            s += "| \(Fmt.f(Stats.percentile(r.negativeConfidences, 95), 2)) / \(Fmt.f(r.negativeConfidences.max(), 2)) |\n"
        }

        // Pooled targets that are not per condition.
        let ran = reports.filter { $0.skipped == nil }
        let negatives = ran.flatMap(\.negatives)
        let fp = negatives.filter(\.matched).count
        let offsets = ran.flatMap(\.offsetErrorsMs)
        let skews = ran.flatMap(\.skewErrors)
        let chance = negatives.filter { $0.matched && ($0.overlap ?? 0) < PeakOverlap.similarMaterialThreshold }.count
        let offsetP95 = Stats.percentile(offsets, 95)
        let skewP95 = Stats.percentile(skews, 95)
        let fpRate = negatives.isEmpty ? nil : 100 * Double(fp) / Double(negatives.count)
        s += "\n| pooled over all conditions | measured | target | |\n|---|---|---|---|\n"
        s += "| false positives (any match) | \(Fmt.pct(fp, negatives.count, 2)) (\(fp)/\(negatives.count)) | ≤ 0.5 % | \(Fmt.passFail(fpRate.map { $0 <= 0.5 })) |\n"
        let shared = negatives.filter { $0.matched && $0.sharedAudio }.count
        let similar = negatives.filter { $0.matched && $0.similarMaterial }.count
        s += "| … of which same audio / similar material / chance alignment (peak overlap, see below) | \(shared) / \(similar) / \(chance) | | |\n"
        s += "| false positives by chance alignment only | \(Fmt.pct(chance, negatives.count, 2)) (\(chance)/\(negatives.count)) | ≤ 0.5 % | \(Fmt.passFail(negatives.isEmpty ? nil : 100 * Double(chance) / Double(negatives.count) <= 0.5)) |\n"
        s += "| offset error p95 (right item) | \(Fmt.f(offsetP95)) ms | ≤ 40 ms | \(Fmt.passFail(offsetP95.map { $0 <= 40 })) |\n"
        let preciseOffsets = ran.flatMap { $0.positives.filter { !($0.sharedAudio && !$0.correct) }.compactMap(\.offsetError) }.map { $0 * 1000 }
        let preciseP95 = Stats.percentile(preciseOffsets, 95)
        s += "| offset error p95 (right item, not counting matches at another repeat of the same section) | \(Fmt.f(preciseP95)) ms | ≤ 40 ms | \(Fmt.passFail(preciseP95.map { $0 <= 40 })) |\n"
        s += "| frequency-skew error p95 (right item) | \(Fmt.f(skewP95, 2)) points | ≤ 0.5 points | \(Fmt.passFail(skewP95.map { $0 <= 0.5 })) |\n"
        for r in ran where r.condition.pitchSkew != 0 {
            let p95 = Stats.percentile(r.skewErrors, 95)
            s += "| frequency-skew error p95, \(r.condition.name) | \(Fmt.f(p95, 2)) points | ≤ 0.5 points | \(Fmt.passFail(p95.map { $0 <= 0.5 })) |\n"
        }

        // Confidence calibration: what a threshold on confidence would buy.
        let positives = ran.flatMap(\.positives)
        let cleanPositives = ran.first { $0.condition.key == "clean10" }?.positives ?? []
        s += "\n### Confidence calibration (pooled)\n\n"
        s += "A result counts only if its confidence ≥ threshold. \"any\" is the product as shipped (every `.match`; the least confidence a match has is 0.46). "
        s += "A chance alignment is a negative matched where its audio has less than \(Int(PeakOverlap.similarMaterialThreshold * 100)) % of its peaks in the reference (no shared or similar audio); "
        s += "\"any match\" also counts negatives matched on audio a catalog file shares or closely resembles.\n\n"
        s += "| confidence ≥ | chance alignments (negatives) | any match of a negative | recall, all conditions | recall, 10 s clean |\n|---|---|---|---|---|\n"
        for t in [0.0, 0.5, 0.55, 0.6, 0.7, 0.8, 0.9] {
            let counted = negatives.filter { $0.matched && ($0.confidence ?? 0) >= t }
            let chance = counted.filter { ($0.overlap ?? 0) < PeakOverlap.similarMaterialThreshold }.count
            let r = positives.filter { $0.correct && ($0.confidence ?? 0) >= t }.count
            let rc = cleanPositives.filter { $0.correct && ($0.confidence ?? 0) >= t }.count
            s += "| \(t == 0 ? "any" : String(format: "%.2f", t)) | \(Fmt.pct(chance, negatives.count, 2)) | \(Fmt.pct(counted.count, negatives.count, 2)) | \(Fmt.pct(r, positives.count)) | \(Fmt.pct(rc, cleanPositives.count)) |\n"
        }
        let negConf = negatives.filter(\.matched).compactMap(\.confidence).sorted(by: >)
        let allowed = Int(Double(negatives.count) * 0.005)
        if negConf.count > allowed {
            let threshold = negConf[allowed]
            let r = positives.filter { $0.correct && ($0.confidence ?? 0) > threshold }.count
            s += "\nFP ≤ 0.5 % needs confidence > \(Fmt.f(threshold, 3)) (max \(allowed) of \(negatives.count) negatives above it); "
            s += "recall at that threshold, all conditions: \(Fmt.pct(r, positives.count)).\n"
        } else {
            s += "\nThe product threshold already keeps FP ≤ 0.5 % on these \(negatives.count) negatives "
            s += "(highest negative confidence: \(Fmt.f(negConf.first, 3))).\n"
        }

        // Failure patterns worth a look.
        s += "\n### Failures by kind\n\n"
        var lines: [String] = []
        for r in ran {
            var kinds: [String: Int] = [:]
            for o in r.positives where !o.correct {
                let v = RecognitionBenchmark.verdict(o)
                kinds[v == "offset-off" && o.sharedAudio ? "offset-off at a repeated section" : v, default: 0] += 1
            }
            let quiet = r.positives.filter { !$0.correct && $0.queryLevel < -45 }.count
            if !kinds.isEmpty {
                var perFile: [String: Int] = [:]
                for o in r.positives where !o.correct { perFile[o.sourceID, default: 0] += 1 }
                let worst = perFile.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.prefix(3)
                lines.append("- \(r.condition.name): " + kinds.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
                             + (quiet > 0 ? "; \(quiet) of them quieter than −45 dBFS" : "")
                             + "; most from " + worst.map { "`\($0.key)` (\($0.value))" }.joined(separator: ", "))
            }
            let fps = r.negatives.filter(\.matched)
            if !fps.isEmpty {
                let same = fps.filter(\.sharedAudio).count, similar = fps.filter(\.similarMaterial).count
                lines.append("- \(r.condition.name) false positives by peak overlap: \(same) same audio, \(similar) similar material, \(fps.count - same - similar) chance")
                lines.append("- \(r.condition.name) false positives: " + fps.prefix(6).map {
                    "`\($0.sourceID)`@\(Fmt.f($0.trueOffset)) s → `\($0.topID!)`@\(Fmt.f($0.offset)) s (conf. \(Fmt.f($0.confidence, 2)), overlap \(Fmt.f($0.overlap.map { $0 * 100 }, 0)) %)"
                }.joined(separator: ", ") + (fps.count > 6 ? ", …" : ""))
            }
        }
        s += lines.isEmpty ? "None.\n" : lines.joined(separator: "\n") + "\n"
        let trueOverlaps = ran.first { $0.condition.key == "clean10" }?.positives.compactMap(\.overlap) ?? []
        s += "\nPeak overlap = share of the clean excerpt's peaks found in the matched reference at the reported offset "
        s += "(±1.5 frames, ±1.5 bins): \(Fmt.f((Stats.percentile(RecognitionBenchmark.overlapBaseline, 50) ?? .nan) * 100)) % median, \(Fmt.f((Stats.percentile(RecognitionBenchmark.overlapBaseline, 99) ?? .nan) * 100)) % p99 for unrelated audio (\(RecognitionBenchmark.overlapBaseline.count) random pairs of catalog files)"
        if let p5 = Stats.percentile(trueOverlaps, 5), let p50 = Stats.percentile(trueOverlaps, 50) {
            s += String(format: ", p5 %.0f %% / p50 %.0f %% for correct 10 s clean matches", p5 * 100, p50 * 100)
        }
        s += ". Classes used above: ≥ \(Int(PeakOverlap.sharedAudioThreshold * 100)) % = same audio (both files, or two places "
        s += "of one file, contain it); \(Int(PeakOverlap.similarMaterialThreshold * 100))–\(Int(PeakOverlap.sharedAudioThreshold * 100)) % = similar material "
        s += "(a common loop or pattern; still a false positive for the product); below = chance alignment (a recognizer weakness).\n"
        s += looseRecallTable(ran)
        s += survivalTable(ran)
        s += "\n(Verdicts: miss = no match; wrong-item = another file on top and the right one absent; wrong-top = the right file "
        s += "matched but not first; offset-off = right file, offset error > 0.1 s. Per-query rows: the run's `--details` file, by default `benchmarks/cache/last-run-queries.tsv`.)\n"
        return s
    }

    /// Recall under a looser rule (right item, offset within 1 s) beside this benchmark's 0.1 s:
    /// how much of a gap is the offset, not the item.
    static func looseRecallTable(_ reports: [ConditionReport]) -> String {
        var s = "\nRecall with the offset allowed within 1 s beside the 0.1 s above, and "
        s += "how often the right place (offset within 0.1 s) is among the positions the result lists: a repeated section "
        s += "matches at each place it occurs, every one that scores alike is listed, and a session picks the one that "
        s += "continues what it heard:\n\n"
        s += "| condition | offset ≤ 0.1 s | offset ≤ 1 s | right place listed |\n|---|---|---|---|\n"
        for r in reports {
            let loose = r.positives.filter { $0.correctItem && ($0.offsetError ?? .infinity) <= 1 }.count
            let listed = r.positives.filter(\.rightPlaceListed).count
            s += "| \(r.condition.name) | \(Fmt.pct(r.recallCount, r.positives.count)) | \(Fmt.pct(loose, r.positives.count)) "
                + "| \(Fmt.pct(listed, r.positives.count)) |\n"
        }
        return s
    }

    /// Which peaks survive each degradation (conditions that keep time and pitch): medians over
    /// the positives, and over the ones that failed.
    static func survivalTable(_ reports: [ConditionReport]) -> String {
        let measured = reports.filter { r in r.positives.contains { $0.survival != nil } }
        guard !measured.isEmpty else { return "" }
        func median(_ o: [Outcome], _ i: Int) -> String { Fmt.f(Stats.median(o.compactMap { $0.survival?[i] }).map { $0 * 100 }, 0) }
        var s = "\nWhich query peaks survive (medians over the positives; in brackets over the failed ones): the share of the clean "
        s += "excerpt's peaks still in the degraded query (±1.5 frames, ±1.5 bins), overall and by band, and the degraded query's "
        s += "peaks per clean peak (above 1: the interference brings peaks of its own, which take the places of the programme's).\n\n"
        s += "| condition | recall | peaks kept % | " + PeakSurvival.bands.map(\.name).joined(separator: " | ") + " | peaks vs clean |\n"
        s += "|---|---|---|" + PeakSurvival.bands.map { _ in "---|" }.joined() + "---|\n"
        for r in measured {
            let all = r.positives.filter { $0.survival != nil }, failed = all.filter { !$0.correct }
            var row = "| \(r.condition.name) | \(Fmt.pct(all.filter(\.correct).count, all.count)) | \(median(all, 0))"
            row += failed.isEmpty ? "" : " (\(median(failed, 0)))"
            for i in 1...PeakSurvival.bands.count {
                row += " | \(median(all, i))" + (failed.isEmpty ? "" : " (\(median(failed, i)))")
            }
            row += " | \(Fmt.f(Stats.median(all.compactMap(\.peakRatio)), 2)) |\n"
            s += row
        }
        return s
    }

    static func performance(_ env: RunEnvironment, _ reports: [ConditionReport]) -> String {
        guard let p = env.prepared else { return "" }
        var s = "## Speed, size and memory (corpus catalog)\n\n" + runLine(env) + "\n\n"
        let f = p.fingerprint
        let hours = f.audioSeconds / 3600
        let mbh = Double(p.catalogBytes) / 1_048_576 / hours
        let times = reports.filter { $0.skipped == nil }.flatMap(\.matchTimes)
        s += "| what | measured | target | |\n|---|---|---|---|\n"
        s += String(format: "| fingerprinting speed (SignatureGenerator on decoded 16 kHz mono, one thread) | %.0f× real time (%.0f× per CPU second; %.0f s of audio in %.2f s) | ≥ 1000× | %@ |\n",
                    f.realTimeFactor, f.cpuRealTimeFactor, f.audioSeconds, f.wallSeconds, Fmt.passFail(f.realTimeFactor >= 1000))
        if let created = env.catalogCreate { s += CatalogCreateBench.row(created, cores: env.cores) }
        s += String(format: "| peaks per second of audio / index entries per second | %.1f / %.1f | | |\n",
                    f.peaksPerSecond, Double(p.entryCount) / f.audioSeconds)
        s += String(format: "| catalog size | %@ for %.2f h = %.3f MB per hour | ≤ 1 MB per hour | %@ |\n",
                    Fmt.bytes(p.catalogBytes), hours, mbh, Fmt.passFail(mbh <= 1))
        s += String(format: "| catalog build (`dataRepresentation`) | %.2f s | | |\n", p.catalogBuildSeconds)
        s += String(format: "| catalog open (`MappedCatalog(contentsOf:)`, in process, median / max of %d) | %.3f / %.3f ms | (≤ 5 ms at 100 h: see scale) | |\n",
                    p.openMilliseconds.count, Stats.median(p.openMilliseconds) ?? 0, p.openMilliseconds.max() ?? 0)
        let cpu = reports.filter { $0.skipped == nil }.flatMap(\.matchCPUTimes)
        s += "| match time, all recognition queries (p50 / p99 / max, \(times.count) queries) | \(Fmt.f(Stats.percentile(times, 50), 2)) / \(Fmt.f(Stats.percentile(times, 99), 2)) / \(Fmt.f(times.max(), 2)) ms | (p99 ≤ 5 ms at 100 h: see scale) | |\n"
        s += "| … thread CPU time of the same matches (p50 / p99) | \(Fmt.f(Stats.percentile(cpu, 50), 2)) / \(Fmt.f(Stats.percentile(cpu, 99), 2)) ms | | |\n"
        s += "| peak RSS of the benchmark process (VmHWM; holds the whole decoded corpus, \(Fmt.bytes(Int(p.corpus.totalDuration * 16000 * 4)))) | \(Fmt.f(env.recognitionPeakRSS)) MB | (not a product number) | |\n"
        if p.corpus.filesFromCache < p.corpus.files.count {
            s += String(format: "| corpus decoding (libopus for Opus, libsndfile for the rest, then soxr to 16 kHz mono, %d threads; %d of %d files from the decode cache) | %.1f s | | |\n",
                        env.cores, p.corpus.filesFromCache, p.corpus.files.count, p.corpus.decodeSeconds)
        }
        return s
    }

    static func scaleSection(_ env: RunEnvironment, _ r: ScaleReport) -> String {
        var s = String(format: "## Scale: a %.0f-hour catalog\n\n", r.hours) + runLine(env) + "\n\n"
        s += String(format: "The catalog holds the %.2f h corpus catalog plus %.1f h of filler references (%d references in all). ",
                    r.realHours, r.hours - r.realHours, r.references)
        s += String(format: "Filler signatures are random peaks drawn from the corpus's own statistics (inter-peak gaps and (bin, magnitude) pairs resampled from the real references; %.1f peaks/s), ", r.fillerPeaksPerSecond)
        s += "so index density matches real audio; their hashes are less repetitive than real music's. Open, RSS and match "
        s += "times are measured in a fresh child process (`earshot-bench _probe`) that maps the file and does nothing else; "
        s += "the file is in the page cache (not dropped: that would disturb the machine). Queries: "
        let count = { (k: String) in r.queries.filter { $0.kind == k }.count }
        s += "\(count("clean10")) × 10 s clean and \(count("noise0")) × 10 s + 0 dB noise excerpts of catalog files, "
            + "\(count("speech0")) of each living-room condition (see Recognition), \(count("negative")) × 10 s negatives "
            + "(held-out music; \(r.queries.filter { !$0.positive }.count) negatives of every kind in the calibration below).\n\n"

        let L = r.large, S = r.small
        func mb(_ v: Double?) -> String { Fmt.f(v.map { $0 / 1024 }) }
        let largeP99 = Stats.percentile(L.matchTimes, 99)
        let rssGrowth = ((L["rss_after_open_kb"] ?? 0) - (L["rss_start_kb"] ?? 0)) / 1024
        let smallGrowth = ((S["rss_after_open_kb"] ?? 0) - (S["rss_start_kb"] ?? 0)) / 1024
        s += String(format: "| what | %.0f h catalog | corpus catalog (%.1f h) | target | |\n|---|---|---|---|---|\n", r.hours, r.smallHours)
        s += String(format: "| file size | %@ (%.3f MB/h) | %@ (%.3f MB/h) | ≤ 1 MB per hour | %@ |\n",
                    Fmt.bytes(r.fileBytes), r.megabytesPerHour, Fmt.bytes(r.smallBytes),
                    Double(r.smallBytes) / 1_048_576 / r.smallHours, Fmt.passFail(r.megabytesPerHour <= 1))
        let indexPerHour = Double(r.indexBytes) / 1_048_576 / r.hours
        s += String(format: "| … of which the index (directory and postings) | %@ (%.3f MB/h) | | ≤ 0.8 MB per hour | %@ |\n",
                    Fmt.bytes(r.indexBytes), indexPerHour, Fmt.passFail(indexPerHour <= 0.8))
        s += "| index entries | \(r.entries) | | | |\n"
        s += String(format: "| catalog open, first in a fresh process | %@ ms | %@ ms | | |\n", Fmt.f(L["open_first_ms"], 3), Fmt.f(S["open_first_ms"], 3))
        if L["full_check_ms"] != nil {
            s += "| full check at load (every checksum, as earshotd and the CLI do), in the fresh process after open | \(Fmt.f(L["full_check_ms"], 0)) ms; "
                + "RSS \(mb(L["rss_before_full_check_kb"])) MB before, peak \(mb(L["full_check_hwm_kb"])), after \(mb(L["rss_after_full_check_kb"])) | "
                + "\(Fmt.f(S["full_check_ms"], 1)) ms | pages dropped as checked | |\n"
        }
        let openMedian = L["open_median_ms"]
        s += String(format: "| catalog open, median of repeated opens | %@ ms | %@ ms | ≤ 5 ms | %@ |\n",
                    Fmt.f(openMedian, 3), Fmt.f(S["open_median_ms"], 3), Fmt.passFail(openMedian.map { $0 <= 5 }))
        var mappedGrowthOK: Bool?
        if let a = L["mapped_after_open_kb"], let b = S["mapped_after_open_kb"], a >= 0, b >= 0 {
            mappedGrowthOK = (a - b) / 1024 <= max(1, 0.02 * Double(r.fileBytes - r.smallBytes) / 1_048_576)
        }
        s += "| resident pages of the catalog mapping after open (smaps) | \(Fmt.f(L["mapped_after_open_kb"], 0)) kB | \(Fmt.f(S["mapped_after_open_kb"], 0)) kB | not proportional to size | \(Fmt.passFail(mappedGrowthOK)) |\n"
        s += "| resident pages of the catalog mapping after all queries (smaps) | \(mb(L["mapped_after_queries_kb"])) MB of \(Fmt.bytes(r.fileBytes)) | \(mb(S["mapped_after_queries_kb"])) MB of \(Fmt.bytes(r.smallBytes)) | | |\n"
        s += "| … (the file was written in one `write`, as `AtomicFile.write` does; on this machine's kernel such a file sits in the page cache as large folios and one fault maps a whole folio, up to 2 MB per touched spot: a `cp`-made copy of the same file showed ≈0.1 MB after open.) | | | | |\n"
        s += "| process RSS before → after open (MB) | \(mb(L["rss_start_kb"])) → \(mb(L["rss_after_open_kb"])) (+\(Fmt.f(rssGrowth, 2))) | \(mb(S["rss_start_kb"])) → \(mb(S["rss_after_open_kb"])) (+\(Fmt.f(smallGrowth, 2))) | not proportional to size | \(Fmt.passFail(rssGrowth - smallGrowth <= max(1, 0.02 * Double(r.fileBytes - r.smallBytes) / 1_048_576))) |\n"
        func touched(_ r: ProbeResult) -> Double? {
            guard let a = r["rssfile_after_queries_kb"], let b = r["rssfile_start_kb"] else { return nil }
            return (a - b) / 1024
        }
        func anon(_ r: ProbeResult) -> Double? {
            guard let a = r["rssanon_after_queries_kb"], let b = r["rssanon_start_kb"] else { return nil }
            return (a - b) / 1024
        }
        s += "| RSS after all queries | \(mb(L["rss_after_queries_kb"])) MB | \(mb(S["rss_after_queries_kb"])) MB | | |\n"
        s += "| … growth of file-backed RSS (catalog pages the lookups touched, and library code) | +\(Fmt.f(touched(L))) MB | +\(Fmt.f(touched(S))) MB | | |\n"
        s += "| … growth of anonymous RSS (matcher scratch, allocations) | +\(Fmt.f(anon(L))) MB | +\(Fmt.f(anon(S))) MB | | |\n"
        s += "| match time p50 / p99 / max | \(Fmt.f(Stats.percentile(L.matchTimes, 50), 2)) / \(Fmt.f(largeP99, 2)) / \(Fmt.f(L.matchTimes.max(), 2)) ms | \(Fmt.f(Stats.percentile(S.matchTimes, 50), 2)) / \(Fmt.f(Stats.percentile(S.matchTimes, 99), 2)) / \(Fmt.f(S.matchTimes.max(), 2)) ms | p99 ≤ 5 ms | \(Fmt.passFail(largeP99.map { $0 <= 5 })) |\n"
        s += "| … thread CPU time of the same matches (p50 / p99) | \(Fmt.f(Stats.percentile(L.matchCPUTimes, 50), 2)) / \(Fmt.f(Stats.percentile(L.matchCPUTimes, 99), 2)) ms | \(Fmt.f(Stats.percentile(S.matchCPUTimes, 50), 2)) / \(Fmt.f(Stats.percentile(S.matchCPUTimes, 99), 2)) ms | | |\n"
        for kind in ["clean10", "noise0"] + Condition.livingRoom where count(kind) > 0 {
            let (a, n) = r.recall(kind, in: L), (b, m) = r.recall(kind, in: S)
            let condition = Condition.all.first { $0.key == kind }
            let name = kind == "clean10" ? "recall, 10 s clean" : kind == "noise0" ? "recall, 10 s + noise 0 dB"
                : "recall, \(condition?.name ?? kind)"
            let target = kind == "clean10" || kind == "noise0" ? 98 : condition?.target
            let pass = target.flatMap { t in n > 0 ? 100 * Double(a) / Double(n) >= t : nil }
            s += "| \(name) | \(Fmt.pct(a, n)) (\(a)/\(n)) | \(Fmt.pct(b, m)) (\(b)/\(m)) | \(target.map { "≥ \(Fmt.f($0, 0)) %" } ?? "—") | \(Fmt.passFail(pass)) |\n"
        }
        // Held-out music of the same games reuses loops and passages of catalog files: a match on
        // such shared audio is right, and the calibration below tells it apart (`PeakOverlap`).
        let (fa, na) = r.falsePositives(in: L), (fb, nb) = r.falsePositives(in: S)
        let chanceL = r.shippedLarge.chance["negative"] ?? (0, 0), chanceS = r.shippedSmall.chance["negative"] ?? (0, 0)
        func falsePositives(_ f: Int, _ n: Int, _ chance: (Int, Int)) -> String {
            "\(Fmt.pct(f, n)) (\(f)/\(n)): \(n - chance.1) on audio a catalog file shares, \(chance.0) of \(chance.1) by chance"
        }
        let chancePasses = chanceL.1 > 0 && chanceS.1 > 0 ? 100 * Double(chanceL.0) / Double(chanceL.1) <= 0.5 && 100 * Double(chanceS.0) / Double(chanceS.1) <= 0.5 : nil
        s += "| false positives: held-out music matched | \(falsePositives(fa, na, chanceL)) | \(falsePositives(fb, nb, chanceS)) | ≤ 0.5 % | \(Fmt.passFail(na > 0 ? 100 * Double(fa) / Double(na) <= 0.5 : nil)) |\n"
        s += "| … by chance (not on shared audio) | \(chanceL.0) of \(chanceL.1) | \(chanceS.0) of \(chanceS.1) | ≤ 0.5 % | \(Fmt.passFail(chancePasses)) |\n"
        s += String(format: "| filler generation / catalog encoding (`dataRepresentation`) | %.2f s / %.2f s | | | |\n", r.generateSeconds, r.buildSeconds)
        s += format1Section(r)
        s += calibrationSection(r)
        return s
    }

    /// The large catalog in format 1 beside format 2: the same references, postings and queries,
    /// probed the same way, one after the other.
    static func format1Section(_ r: ScaleReport) -> String {
        guard let (bytes, old) = r.format1 else { return "" }
        let new = r.large
        var same = 0
        for (a, b) in zip(new.queries, old.queries) where a.id == b.id && a.offset == b.offset && a.confidence == b.confidence { same += 1 }
        func times(_ p: ProbeResult) -> String {
            "\(Fmt.f(Stats.percentile(p.matchTimes, 50), 2)) / \(Fmt.f(Stats.percentile(p.matchTimes, 99), 2)) ms"
        }
        var s = String(format: "\n### The %.0f h catalog in file format 1 (earlier releases) and 2\n\n", r.hours)
        s += "The same catalog written both ways and probed the same way, format 2 first. Format 2 stores each posting as one "
        s += "5-byte record where format 1 had 6 bytes in two arrays (docs/FORMATS.md, \"Catalog format versions\").\n\n"
        s += "| what | format 2 | format 1 |\n|---|---|---|\n"
        s += String(format: "| file size | %@ (%.3f MB/h) | %@ (%.3f MB/h) |\n", Fmt.bytes(r.fileBytes), r.megabytesPerHour,
                    Fmt.bytes(bytes), Double(bytes) / 1_048_576 / r.hours)
        s += "| catalog open, first / median of repeated opens | \(Fmt.f(new["open_first_ms"], 3)) / \(Fmt.f(new["open_median_ms"], 3)) ms | \(Fmt.f(old["open_first_ms"], 3)) / \(Fmt.f(old["open_median_ms"], 3)) ms |\n"
        s += "| full check at load | \(Fmt.f(new["full_check_ms"], 0)) ms | \(Fmt.f(old["full_check_ms"], 0)) ms |\n"
        s += "| match time p50 / p99 | \(times(new)) | \(times(old)) |\n"
        s += "| answers the same (item, offset, confidence) | \(same) of \(new.queries.count) | |\n"
        return s
    }

    /// How far chance reaches on audio that is not in the catalog, at both sizes.
    static func calibrationSection(_ r: ScaleReport) -> String {
        guard let first = r.calibrationSmall.first else { return "" }
        let kinds = first.chance.keys.sorted()
        var s = "\n### Confidence calibration: audio that is not in the catalog\n\n"
        s += "Each query's best candidate, searched with the evidence floor lowered to \(Calibration.floor) aligned anchors, "
        s += "in both catalogs (the lowered floor also widens the search, so the recall column is what aligned anchors alone "
        s += "find at most; the shipped search also takes weaker candidates the reference's peaks confirm, below). Negatives (\(r.queries.filter { !$0.positive }.count) in all): "
        s += NegativeKind.all.map { k in "\(k.name) (`\(k.key)`, \(r.queries.filter { $0.kind == k.key }.count))" }.joined(separator: ", ")
        s += ", and held-out music (`negative`, \(r.queries.filter { $0.kind == "negative" }.count)). A negative whose best candidate is "
        s += "audio a catalog file shares (peak overlap ≥ 8 % with its clean excerpt: a reused loop or passage, which the "
        s += "recognizer is right to find) is counted apart; every other one reaching the minimum is a chance match. Recall: "
        s += "all positive queries of the scale benchmark (clean, 0 dB noise and every living-room condition), item and "
        s += "offset right. A match needs \(r.requiredSmall) aligned anchors in the \(Fmt.f(r.smallHours, 1)) h catalog and "
        s += "\(r.requiredLarge) in the \(Fmt.f(r.hours, 0)) h one (`Matcher.requiredInliers`: one more per tenfold index entries "
        s += "beyond a million); confidence is the margin over that minimum (0.46 at it).\n\n"
        s += Calibration.table(small: r.calibrationSmall, large: r.calibrationLarge, requiredSmall: r.requiredSmall,
                               requiredLarge: r.requiredLarge, hours: (r.smallHours, r.hours))
        s += "\nAt the shipped minimum, by kind (chance matches / negatives):\n\n| kind | \(Fmt.f(r.smallHours, 1)) h | \(Fmt.f(r.hours, 0)) h |\n|---|---|---|\n"
        let a = r.calibrationSmall.first { $0.minimumInliers == r.requiredSmall }
        let b = r.calibrationLarge.first { $0.minimumInliers == r.requiredLarge }
        for kind in kinds {
            func cell(_ row: Calibration.Row?) -> String {
                guard let v = row?.chance[kind] else { return "—" }
                return "\(v.0)/\(v.1)"
            }
            s += "| `\(kind)` | \(cell(a)) | \(cell(b)) |\n"
        }
        s += "| shared audio found (not counted above) | \(a?.shared ?? 0) | \(b?.shared ?? 0) |\n"
        // The rows above count aligned anchors alone; the product also takes a candidate with fewer
        // than the minimum, from `Matcher.confirmationFloor`, that the reference's own peaks confirm
        // (`PeakVerification`).
        let x = r.shippedSmall, y = r.shippedLarge
        s += "\nThe shipped search (`Matcher.match`: the minimum, or a candidate with fewer anchors, from \(Matcher.confirmationFloor), "
        s += "that the reference's stored peaks confirm, and when nothing else is found, a place of fewer, from 2, that they "
        s += "confirm far above chance: the peak search), on the same queries:\n\n"
        s += "| | \(Fmt.f(r.smallHours, 1)) h | \(Fmt.f(r.hours, 0)) h |\n|---|---|---|\n"
        s += "| chance matches | \(Fmt.pct(x.allChance.0, x.allChance.1)) (\(x.allChance.0)/\(x.allChance.1)) "
        s += "| \(Fmt.pct(y.allChance.0, y.allChance.1)) (\(y.allChance.0)/\(y.allChance.1)) |\n"
        for kind in kinds {
            func cell(_ row: Calibration.Row) -> String { row.chance[kind].map { "\($0.0)/\($0.1)" } ?? "—" }
            s += "| … `\(kind)` | \(cell(x)) | \(cell(y)) |\n"
        }
        s += "| shared audio found (not counted above) | \(x.shared) | \(y.shared) |\n"
        s += "| recall, all positives | \(Fmt.pct(x.recall.0, x.recall.1)) | \(Fmt.pct(y.recall.0, y.recall.1)) |\n"
        return s
    }
}
