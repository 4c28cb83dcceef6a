import EarshotAudio
import EarshotCore
import EarshotStore
import EarshotSystem
import EarshotTestSupport
import Foundation

/// What both benchmarks share: the decoded corpus, its split, the reference signatures and the
/// catalog built from them.
struct Prepared {
    var corpus: Corpus
    var catalogFiles: [Int]
    var heldOutFiles: [Int]
    /// Signatures of the catalog files, in `catalogFiles` order.
    var signatures: [Signature]
    /// Every recording queries are cut from: corpus files first (same indices), then synthetic
    /// negatives.
    var recordings: [Recording]
    var syntheticNegatives: [Int]
    /// Recordings of the negative corpus (`--negative-corpus`), after the synthetic negatives.
    var otherNegatives: [Int] = []

    var fingerprint: FingerprintStats
    var catalogBytes: Int
    var catalogBuildSeconds: Double
    var catalogPath: String
    var openMilliseconds: [Double]
    var entryCount: Int

    var catalogDuration: Double { catalogFiles.reduce(0) { $0 + corpus.files[$1].duration } }
}

struct FingerprintStats {
    var audioSeconds: Double
    var wallSeconds: Double
    var cpuSeconds: Double
    var peaks: Int
    var realTimeFactor: Double { audioSeconds / wallSeconds }
    var cpuRealTimeFactor: Double { audioSeconds / cpuSeconds }
    var peaksPerSecond: Double { Double(peaks) / audioSeconds }
}

enum Preparation {
    static func run(options: Options, corpus: Corpus, negativeCorpus: Corpus? = nil, workDirectory: String) throws -> Prepared {
        let (catalogFiles, heldOut) = corpus.split(seed: options.seed)
        say("catalog: \(catalogFiles.count) files (\(Fmt.duration(catalogFiles.reduce(0) { $0 + corpus.files[$1].duration }))); "
            + "held out as negatives: \(heldOut.map { corpus.files[$0].id }.joined(separator: ", "))")

        // Fingerprinting speed: SignatureGenerator.append + signature() on decoded 16 kHz audio,
        // one thread, blocks of 16384 samples built before the clock starts.
        var stats = FingerprintStats(audioSeconds: 0, wallSeconds: 0, cpuSeconds: 0, peaks: 0)
        var signatures: [Signature] = []
        let block = 16_384
        for i in catalogFiles {
            let samples = corpus.files[i].samples
            var buffers: [PCMBuffer] = []
            var p = 0
            while p < samples.count {
                let q = min(samples.count, p + block)
                buffers.append(try PCMBuffer(float32: Array(samples[p..<q]), sampleRate: FingerprintParameters.sampleRate))
                p = q
            }
            let t0 = Clock.now(), c0 = Clock.threadCPU()
            let generator = SignatureGenerator()
            for b in buffers { try generator.append(b) }
            let signature = try generator.signature()
            stats.wallSeconds += Clock.now() - t0
            stats.cpuSeconds += Clock.threadCPU() - c0
            stats.audioSeconds += corpus.files[i].duration
            stats.peaks += signature.peaks.count
            signatures.append(signature)
        }
        say(String(format: "fingerprinting: %.0f s of audio in %.2f s wall (%.0f× real time; %.0f× per CPU second), %.1f peaks/s",
                   stats.audioSeconds, stats.wallSeconds, stats.realTimeFactor, stats.cpuRealTimeFactor, stats.peaksPerSecond))

        var catalog = CustomCatalog()
        for (k, i) in catalogFiles.enumerated() {
            let f = corpus.files[i]
            try catalog.addReferenceSignature(signatures[k], representing: [MediaItem(id: f.id, title: f.name)])
        }
        let t0 = Clock.now()
        let bytes = try catalog.dataRepresentation()
        let buildSeconds = Clock.now() - t0
        let path = "\(workDirectory)/corpus.earcat"
        try AtomicFile.write(bytes, to: path)
        var opens: [Double] = []
        var entries = 0
        for _ in 0..<21 {
            let t = Clock.now()
            let c = try MappedCatalog(contentsOf: path, verification: .structure)
            opens.append((Clock.now() - t) * 1000)
            entries = c.entryCount
        }
        let hours = stats.audioSeconds / 3600
        say(String(format: "catalog: %@ for %.2f h = %.3f MB/h, %d index entries (%.1f/s), built in %.2f s, open median %.3f ms",
                   Fmt.bytes(bytes.count), hours, Double(bytes.count) / 1_048_576 / hours, entries,
                   Double(entries) / stats.audioSeconds, buildSeconds, Stats.median(opens)!))

        var recordings = corpus.files.enumerated().map { i, f in
            Recording(id: f.id, samples: f.samples, inCatalog: catalogFiles.contains(i))
        }
        // A few synthetic negatives too: music that is nothing like the corpus.
        var synthetic: [Int] = []
        for k in 0..<4 {
            synthetic.append(recordings.count)
            recordings.append(Recording(id: "synthetic-negative-\(k)",
                                        samples: SyntheticMusic.make(seed: deriveSeed(options.seed, 0x5EED, UInt64(k)), duration: 30),
                                        inCatalog: false))
        }
        // Other music of the same kind, never in the catalog: negatives only.
        var others: [Int] = []
        for f in negativeCorpus?.files ?? [] {
            others.append(recordings.count)
            recordings.append(Recording(id: "other/\(f.id)", samples: f.samples, inCatalog: false))
        }
        return Prepared(corpus: corpus, catalogFiles: catalogFiles, heldOutFiles: heldOut, signatures: signatures,
                        recordings: recordings, syntheticNegatives: synthetic, otherNegatives: others, fingerprint: stats,
                        catalogBytes: bytes.count, catalogBuildSeconds: buildSeconds, catalogPath: path,
                        openMilliseconds: opens, entryCount: entries)
    }

    /// Positive query positions: round-robin over the catalog files.
    static func positivePlans(_ p: Prepared, count: Int, seed: UInt64) -> [QueryPlan] {
        QueryPlanner.plan(count: count, sources: p.catalogFiles, recordings: p.recordings, seed: deriveSeed(seed, 1))
    }

    /// Negative query positions: held-out files, about one in ten from synthetic music; with a
    /// negative corpus, half of the real ones from its files.
    static func negativePlans(_ p: Prepared, count: Int, seed: UInt64) -> [QueryPlan] {
        let syntheticCount = p.heldOutFiles.isEmpty ? count : (count >= 10 ? max(1, count / 10) : 0)
        let otherCount = p.otherNegatives.isEmpty ? 0 : (count - syntheticCount) / 2
        let real = QueryPlanner.plan(count: count - syntheticCount - otherCount, sources: p.heldOutFiles, recordings: p.recordings,
                                     seed: deriveSeed(seed, 2))
            + QueryPlanner.plan(count: otherCount, sources: p.otherNegatives, recordings: p.recordings, seed: deriveSeed(seed, 4))
        let synth = QueryPlanner.plan(count: syntheticCount, sources: p.syntheticNegatives, recordings: p.recordings,
                                      seed: deriveSeed(seed, 3))
        return real + synth
    }
}

/// The result of one query.
struct Outcome {
    var condition: String
    var positive: Bool
    var sourceID: String
    var trueOffset: Double
    var topID: String?
    var offset: Double?
    var frequencySkew: Double?
    var timeSkew: Double?
    var confidence: Double?
    var resultCount: Int
    var expectedInResults: Bool
    /// The right item at the right offset (within 0.1 s) anywhere in the result: a repeated
    /// section lists each place it occurs.
    var rightPlaceListed = false
    var matchMilliseconds: Double
    var matchCPUMilliseconds: Double = 0
    var queryLevel: Double
    var error: String?
    /// Peak overlap between the clean excerpt and the top reference at the reported offset
    /// (computed for every result that is not correct, and for correct 10 s clean matches).
    var overlap: Double?
    /// Positives of conditions that keep time and pitch: the share of the clean excerpt's query
    /// peaks still in the degraded query (±1.5 frames, ±1.5 bins), overall and by band
    /// (`PeakSurvival.bands`), and the degraded query's peak count over the clean one's.
    var survival: [Double]?
    var peakRatio: Double?
    /// How the top answer was found.
    var evidence: Evidence?

    /// The reference holds this very audio at the reported place (a shared or repeated section).
    var sharedAudio: Bool { (overlap ?? 0) >= PeakOverlap.sharedAudioThreshold }
    /// Overlap well above chance but below "same audio": similar material (a common loop, the same
    /// drum pattern at the same tempo).
    var similarMaterial: Bool { (overlap ?? 0) >= PeakOverlap.similarMaterialThreshold && !sharedAudio }

    var matched: Bool { topID != nil }
    var correctItem: Bool { positive && topID == sourceID }
    var offsetError: Double? { correctItem ? offset.map { abs($0 - trueOffset) } : nil }
    /// The recall criterion: right item on top, offset within 0.1 s.
    var correct: Bool { (offsetError ?? .infinity) <= RecognitionBenchmark.offsetTolerance }
}

/// The evidence behind a top answer: its aligned anchors, which search found it, and the
/// reference's peak score there when a search checked it.
struct Evidence {
    var inliers: Int
    var foundBy: String
    var peakScore: Double?

    init(_ c: Matcher.Candidate, required: Int) {
        inliers = c.inliers
        peakScore = c.peakScore
        foundBy = c.lastResort ? "peak-search" : c.peakScore == nil ? "anchors" : c.inliers < required ? "confirmed" : "room"
    }
}

struct ConditionReport {
    var condition: Condition
    var skipped: String?
    var positives: [Outcome] = []
    var negatives: [Outcome] = []
    var seconds: Double = 0

    var recallCount: Int { positives.filter(\.correct).count }
    var recall: Double? { positives.isEmpty ? nil : 100 * Double(recallCount) / Double(positives.count) }
    var wrongItem: Int { positives.filter { $0.matched && !$0.correctItem }.count }
    var noMatch: Int { positives.filter { !$0.matched }.count }
    var offsetOff: Int { positives.filter { $0.correctItem && !$0.correct }.count }
    var falsePositives: Int { negatives.filter(\.matched).count }
    /// False positives whose audio the matched reference really contains (see `PeakOverlap`).
    var sharedAudioFalsePositives: Int { negatives.filter { $0.matched && $0.sharedAudio }.count }
    var offsetErrorsMs: [Double] { positives.compactMap(\.offsetError).map { $0 * 1000 } }
    /// In points (percent): |measured − true| × 100.
    var skewErrors: [Double] {
        positives.filter(\.correctItem).compactMap { o in o.frequencySkew.map { abs($0 - condition.pitchSkew) * 100 } }
    }
    var timeSkewErrors: [Double] {
        positives.filter(\.correctItem).compactMap { o in o.timeSkew.map { abs($0 - condition.timeSkew) * 100 } }
    }
    var matchTimes: [Double] { (positives + negatives).map(\.matchMilliseconds) }
    var matchCPUTimes: [Double] { (positives + negatives).map(\.matchCPUMilliseconds) }
    var trueConfidences: [Double] { positives.filter(\.correct).compactMap(\.confidence) }
    /// Top confidence of every negative (0 when nothing matched).
    var negativeConfidences: [Double] { negatives.map { $0.confidence ?? 0 } }

    var recallPass: Bool? {
        guard let target = condition.target, let recall else { return nil }
        return recall >= target
    }
}

enum RecognitionBenchmark {
    static let offsetTolerance = 0.1
    /// Peak overlaps of unrelated pairs measured by the last run (for the report).
    nonisolated(unsafe) static var overlapBaseline: [Double] = []

    static func run(options: Options, prepared p: Prepared, workDirectory: String) throws -> [ConditionReport] {
        let matcher = Matcher(catalog: try MappedCatalog(contentsOf: p.catalogPath))
        let maker = QueryMaker(workDirectory: workDirectory)
        maker.interferers = p.heldOutFiles.map { p.recordings[$0] }
        if options.conditions.map({ $0.contains { $0.hasPrefix("speech") || $0.hasPrefix("babble") } }) ?? true {
            maker.speech = try SpeechPool.make(cacheDirectory: "\(options.root)/benchmarks/cache", seed: options.seed)
        }
        let positives = Preparation.positivePlans(p, count: options.queriesPerCondition, seed: options.seed)
        let negatives = Preparation.negativePlans(p, count: options.negativesPerCondition, seed: options.seed)
        var conditions = Condition.all
        if let keys = options.conditions {
            for k in keys where !conditions.contains(where: { $0.key == k }) {
                throw BenchError("unknown condition '\(k)'; known: \(Condition.all.map(\.key).joined(separator: ", "))")
            }
            conditions = conditions.filter { keys.contains($0.key) }
        }
        say("queries per condition: \(positives.count) positive (catalog files, round-robin), "
            + "\(negatives.count) negative (held-out files + \(negatives.filter { p.syntheticNegatives.contains($0.source) }.count) synthetic)")

        // Three untimed matches first: the catalog pages the first lookups touch are faulted in.
        if let first = positives.first {
            let sig = try Fingerprint.signature(of: try maker.make(Condition.all[0], from: p.recordings[first.source], plan: first, seed: 0))
            for _ in 0..<3 { _ = matcher.match(sig) }
        }

        var referencePeaks: [String: [Peak]] = [:]
        for (k, i) in p.catalogFiles.enumerated() { referencePeaks[p.corpus.files[i].id] = p.signatures[k].peaks }

        // What unrelated audio scores: 10 s of one catalog file against another file at a random place.
        var rng = SeededRandom(seed: deriveSeed(options.seed, 0x0B5E))
        var baseline: [Double] = []
        if p.signatures.count >= 2 {
            for _ in 0..<200 {
                let a = Int(rng.next() % UInt64(p.signatures.count))
                var b = Int(rng.next() % UInt64(p.signatures.count - 1))
                if b >= a { b += 1 }
                let sa = p.signatures[a], sb = p.signatures[b]
                guard sa.duration > 12, sb.duration > 12,
                    let q = try? sa.slice(from: 1 + rng.unit() * (sa.duration - 12), duration: 10)
                else { continue }
                baseline.append(PeakOverlap.fraction(query: q.peaks, reference: sb.peaks, offset: 1 + rng.unit() * (sb.duration - 12)))
            }
        }
        overlapBaseline = baseline
        say(String(format: "peak overlap of unrelated audio (%d pairs): p50 %.1f %%, p99 %.1f %%, max %.1f %%", baseline.count,
                   100 * (Stats.percentile(baseline, 50) ?? 0), 100 * (Stats.percentile(baseline, 99) ?? 0), 100 * (baseline.max() ?? 0)))

        var reports: [ConditionReport] = []
        var details = "condition\tkind\tsource\ttrue_offset\tlevel_dbfs\ttop_id\toffset\tfreq_skew\ttime_skew\tconfidence\tresults\texpected_in_results\tmatch_ms\tverdict\tpeak_overlap\terror\tinliers\tfound_by\tpeak_score\n"
        for condition in conditions {
            // The condition's place in the full list seeds its degradations, so a run of a few
            // conditions (--conditions) degrades each query exactly as the full run does.
            let ci = Condition.all.firstIndex { $0.key == condition.key } ?? 0
            var report = ConditionReport(condition: condition)
            if let reason = maker.unavailable(condition) {
                report.skipped = reason
                say(String(format: "%-8@ %@", condition.key as NSString, reason as NSString))
                reports.append(report)
                continue
            }
            let t0 = Clock.now()
            let cleanCut = Condition(key: "clean", name: "clean", length: condition.length, transform: .none)
            for (positive, plans) in [(true, positives), (false, negatives)] {
                for (qi, plan) in plans.enumerated() {
                    let recording = p.recordings[plan.source]
                    let seed = deriveSeed(options.seed, UInt64(ci), positive ? 1 : 2, UInt64(qi))
                    var queryPeaks: [Peak]?
                    var o = Outcome(condition: condition.key, positive: positive, sourceID: recording.id,
                                    trueOffset: plan.start, resultCount: 0, expectedInResults: false,
                                    matchMilliseconds: 0, queryLevel: -200)
                    do {
                        let audio = try maker.make(condition, from: recording, plan: plan, seed: seed)
                        o.queryLevel = Fingerprint.rmsDBFS(audio)
                        let signature = try Fingerprint.signature(of: audio)
                        queryPeaks = signature.peaks
                        if positive, condition.rate == 1, condition.pitchSkew == 0,
                           let clean = try? Fingerprint.signature(of: maker.make(cleanCut, from: recording, plan: plan, seed: 0)).peaks,
                           !clean.isEmpty
                        {
                            o.survival = PeakSurvival.fractions(clean: clean, degraded: signature.peaks)
                            o.peakRatio = Double(signature.peaks.count) / Double(clean.count)
                        }
                        let t = Clock.now(), c = Clock.threadCPU()
                        let candidates = matcher.referenceCandidates(signature)
                        let result = matcher.result(of: candidates, for: signature)
                        o.matchMilliseconds = (Clock.now() - t) * 1000
                        o.matchCPUMilliseconds = (Clock.threadCPU() - c) * 1000
                        switch result {
                        case .match(let items):
                            let top = items[0]
                            o.evidence = candidates.first { $0.referenceIndex == top.referenceIndex }
                                .map { Evidence($0, required: matcher.requiredInliers) }
                            o.topID = top.mediaItem.id
                            o.offset = top.matchOffset
                            o.frequencySkew = top.frequencySkew
                            o.timeSkew = top.timeSkew
                            o.confidence = top.confidence
                            o.resultCount = items.count
                            o.expectedInResults = items.contains { $0.mediaItem.id == recording.id }
                            o.rightPlaceListed = positive && items.contains {
                                $0.mediaItem.id == recording.id
                                    && abs($0.matchOffset - plan.start) <= RecognitionBenchmark.offsetTolerance
                            }
                        case .noMatch: break
                        case .error(let e): o.error = "\(e)"
                        }
                    } catch {
                        o.error = "\(error)"
                    }
                    if let top = o.topID, let offset = o.offset, !o.correct || condition.key == "clean10",
                        let reference = referencePeaks[top]
                    {
                        let clean = Condition(key: "clean", name: "clean", length: condition.length, transform: .none)
                        if let peaks = try? Fingerprint.signature(of: maker.make(clean, from: recording, plan: plan, seed: 0)).peaks {
                            o.overlap = PeakOverlap.fraction(query: peaks, reference: reference, offset: offset)
                        }
                        // Music mixed into a negative may itself share audio with the catalog.
                        if !positive, case .otherMusic = condition.transform, let peaks = queryPeaks {
                            o.overlap = max(o.overlap ?? 0, PeakOverlap.fraction(query: peaks, reference: reference, offset: offset))
                        }
                    }
                    if positive { report.positives.append(o) } else { report.negatives.append(o) }
                    details += detailLine(o)
                    if options.verbose, positive ? !o.correct : o.matched { say("  " + detailLine(o).dropLast()) }
                }
            }
            report.seconds = Clock.now() - t0
            reports.append(report)
            say(summaryLine(report))
        }
        try? AtomicFile.write(Array(details.utf8), to: options.detailsPath)
        say("per-query details: \(options.detailsPath)")
        return reports
    }

    static func verdict(_ o: Outcome) -> String {
        if o.positive {
            if o.correct { return "ok" }
            if !o.matched { return o.error == nil ? "miss" : "error" }
            return o.correctItem ? "offset-off" : (o.expectedInResults ? "wrong-top" : "wrong-item")
        }
        return o.matched ? "false-positive" : "ok"
    }

    static func detailLine(_ o: Outcome) -> String {
        func d(_ v: Double?, _ digits: Int = 4) -> String { v.map { String(format: "%.\(digits)f", $0) } ?? "" }
        return [o.condition, o.positive ? "positive" : "negative", o.sourceID, d(o.trueOffset), d(o.queryLevel, 1),
                o.topID ?? "", d(o.offset), d(o.frequencySkew), d(o.timeSkew), d(o.confidence, 3), String(o.resultCount),
                o.expectedInResults ? "yes" : "no", d(o.matchMilliseconds, 3), verdict(o), d(o.overlap, 3),
                (o.error ?? "").replacingOccurrences(of: "\t", with: " ").replacingOccurrences(of: "\n", with: " "),
                o.evidence.map { String($0.inliers) } ?? "", o.evidence?.foundBy ?? "", d(o.evidence?.peakScore, 2)]
            .joined(separator: "\t") + "\n"
    }

    static func summaryLine(_ r: ConditionReport) -> String {
        String(format: "%-8@ recall %5@ (%d/%d; wrong %d, miss %d, offset-off %d)  FP %d/%d  off p95 %@ ms  skew p95 %@ pt  match p50/p99 %@/%@ ms  conf true p5 %@ neg max %@  [%.1f s]",
               r.condition.key as NSString, Fmt.f(r.recall) as NSString, r.recallCount, r.positives.count, r.wrongItem,
               r.noMatch, r.offsetOff, r.falsePositives, r.negatives.count,
               Fmt.f(Stats.percentile(r.offsetErrorsMs, 95)) as NSString, Fmt.f(Stats.percentile(r.skewErrors, 95), 2) as NSString,
               Fmt.f(Stats.percentile(r.matchTimes, 50), 2) as NSString, Fmt.f(Stats.percentile(r.matchTimes, 99), 2) as NSString,
               Fmt.f(Stats.percentile(r.trueConfidences, 5), 2) as NSString,
               Fmt.f(r.negativeConfidences.max(), 2) as NSString, r.seconds)
    }
}

/// Which of a query's peaks a degradation leaves, by band: why queries fail.
enum PeakSurvival {
    /// FFT-bin bands: 250–630 Hz, 630 Hz–1.6 kHz, 1.6–4 kHz.
    static let bands: [(name: String, low: Float, high: Float)] = [("250–630 Hz", 0, 40), ("630 Hz–1.6 kHz", 40, 102), ("1.6–4 kHz", 102, 10_000)]

    /// [all, band 1, band 2, band 3]: the share of `clean` peaks with a `degraded` peak close by.
    static func fractions(clean: [Peak], degraded: [Peak]) -> [Double] {
        [PeakOverlap.fraction(query: clean, reference: degraded, offset: 0)] + bands.map { b in
            PeakOverlap.fraction(query: clean.filter { $0.bin >= b.low && $0.bin < b.high }, reference: degraded, offset: 0)
        }
    }
}
