import EarshotAudio
@_spi(EarlierFormats) import EarshotCore
import EarshotStore
import EarshotSystem
import EarshotTestSupport
import Foundation

/// What a probe process measured: a fresh process that maps a catalog file, opens it repeatedly,
/// then matches saved query signatures.
struct ProbeResult {
    var values: [String: Double] = [:]
    /// Per query: top item id, offset, confidence, match milliseconds.
    var queries: [(id: String?, offset: Double, confidence: Double, ms: Double, cpu: Double)] = []
    /// Per query, with the evidence floor lowered (`Calibration.floor`): the best candidate's
    /// item id, inliers and offset.
    var candidates: [(id: String?, inliers: Int, offset: Double)] = []

    subscript(_ key: String) -> Double? { values[key] }
    var matchTimes: [Double] { queries.map(\.ms) }
    var matchCPUTimes: [Double] { queries.map(\.cpu) }
}

struct ScaleQuery {
    var kind: String
    var positive: Bool
    var id: String
    var start: Double
    /// A negative's clean excerpt's peaks: to tell audio a catalog file shares (a reused loop)
    /// from a chance alignment.
    var cleanPeaks: [Peak] = []
}

struct ScaleReport {
    var hours: Double
    var realHours: Double
    var references: Int
    var fillerPeaksPerSecond: Double
    var generateSeconds: Double
    var buildSeconds: Double
    var fileBytes: Int
    /// The index alone (directory and postings).
    var indexBytes: Int
    var entries: Int
    var queries: [ScaleQuery]
    var small: ProbeResult
    var large: ProbeResult
    /// The same large catalog in format 1, as earlier releases wrote it (nil past its 596 hours).
    var format1: (bytes: Int, probe: ProbeResult)?
    var smallBytes: Int
    var smallHours: Double
    var calibrationSmall: [Calibration.Row]
    var calibrationLarge: [Calibration.Row]
    /// The shipped search's answers to the same queries (`Calibration.shipped`).
    var shippedSmall: Calibration.Row
    var shippedLarge: Calibration.Row
    /// Aligned anchors a match needs in each catalog (`Matcher.requiredInliers`).
    var requiredSmall: Int
    var requiredLarge: Int

    var megabytesPerHour: Double { Double(fileBytes) / 1_048_576 / hours }

    /// (correct, total) for queries of `kind` against a probe's results.
    func recall(_ kind: String, in probe: ProbeResult) -> (Int, Int) {
        var ok = 0, n = 0
        for (i, q) in queries.enumerated() where q.kind == kind && i < probe.queries.count {
            n += 1
            let r = probe.queries[i]
            if r.id == q.id && abs(r.offset - q.start) <= RecognitionBenchmark.offsetTolerance { ok += 1 }
        }
        return (ok, n)
    }

    func falsePositives(in probe: ProbeResult) -> (Int, Int) {
        var fp = 0, n = 0
        for (i, q) in queries.enumerated() where q.kind == "negative" && i < probe.queries.count {
            n += 1
            if probe.queries[i].id != nil { fp += 1 }
        }
        return (fp, n)
    }
}

enum ScaleBenchmark {
    static let fillerReferenceSeconds = 600.0

    static func run(options: Options, prepared p: Prepared, workDirectory: String) throws -> ScaleReport {
        let targetHours = options.scaleTargetHours
        let realSeconds = p.catalogDuration
        say()
        say(String(format: "scale: building a %.0f-hour catalog: the %.2f h corpus catalog + %.1f h of filler references",
                   targetHours, realSeconds / 3600, max(0, targetHours * 3600 - realSeconds) / 3600))

        let filler = try FillerPeaks(p)

        let t0 = Clock.now()
        var catalog = CustomCatalog()
        for (k, i) in p.catalogFiles.enumerated() {
            let f = p.corpus.files[i]
            try catalog.addReferenceSignature(p.signatures[k], representing: [MediaItem(id: f.id, title: f.name)])
        }
        var fillerSeconds = max(0, targetHours * 3600 - realSeconds)
        var fillerPeaks = 0, fillerDuration = 0.0
        var index = 0
        var rng = SeededRandom(seed: deriveSeed(options.seed, 0xF111))
        while fillerSeconds > 1 {
            let duration = min(fillerReferenceSeconds, fillerSeconds)
            let signature = try filler.signature(duration: duration, rng: &rng)
            try catalog.addReferenceSignature(signature, representing: [MediaItem(id: String(format: "filler-%04d", index))])
            fillerPeaks += signature.peaks.count
            fillerDuration += duration
            fillerSeconds -= duration
            index += 1
        }
        let generateSeconds = Clock.now() - t0
        let t1 = Clock.now()
        let bytes = try catalog.dataRepresentation()
        let buildSeconds = Clock.now() - t1
        // Before and after: the same catalog as earlier releases wrote it, where format 1 holds
        // it (up to 596 hours: the writer says so before it hashes anything).
        let format1Bytes = try? catalog.dataRepresentation(formatVersion: 1)
        let references = catalog.references.count
        let hours = catalog.totalDuration / 3600
        catalog = CustomCatalog()  // free the signatures
        let path = "\(workDirectory)/scale.earcat"
        try AtomicFile.write(bytes, to: path)
        let fileBytes = bytes.count
        let written = try MappedCatalog(contentsOf: path)
        let entries = written.entryCount, indexBytes = written.indexByteCount
        say(String(format: "scale catalog: %d references, %.1f h, %@ (%.3f MB/h), %d entries; filler generated in %.2f s, encoded in %.2f s",
                   references, hours, Fmt.bytes(fileBytes), Double(fileBytes) / 1_048_576 / hours, entries,
                   generateSeconds, buildSeconds))

        // Queries: 10 s clean and 10 s + 0 dB noise excerpts of catalog files (in the catalog),
        // and 10 s excerpts of held-out files and synthetic music (not in it).
        let maker = QueryMaker(workDirectory: workDirectory)
        maker.interferers = p.heldOutFiles.map { p.recordings[$0] }
        maker.speech = try SpeechPool.make(cacheDirectory: "\(options.root)/benchmarks/cache", seed: options.seed)
        let n = options.queriesPerCondition
        var queries: [ScaleQuery] = []
        var encoded: [UInt8] = []
        let clean = Condition.all.first { $0.key == "clean10" }!
        func add(_ condition: Condition, _ plans: [QueryPlan], positive: Bool, seed: UInt64,
                 kind: String = "negative", from recordings: [Recording]? = nil) throws {
            for (qi, plan) in plans.enumerated() {
                let recording = (recordings ?? p.recordings)[plan.source]
                let audio = try maker.make(condition, from: recording, plan: plan, seed: deriveSeed(seed, UInt64(qi)))
                let data = try Fingerprint.signature(of: audio).dataRepresentation
                withUnsafeBytes(of: UInt32(data.count).littleEndian) { encoded.append(contentsOf: $0) }
                encoded.append(contentsOf: data)
                var query = ScaleQuery(kind: positive ? condition.key : kind, positive: positive, id: recording.id, start: plan.start)
                if !positive {
                    query.cleanPeaks = try Fingerprint.signature(of: maker.make(clean, from: recording, plan: plan, seed: 0)).peaks
                }
                queries.append(query)
            }
        }
        let noisy = Condition.all.first { $0.key == "noise0" }!
        let positivePlans = Preparation.positivePlans(p, count: n, seed: deriveSeed(options.seed, 0x5CA1E))
        try add(clean, positivePlans, positive: true, seed: deriveSeed(options.seed, 11))
        try add(noisy, Array(positivePlans.prefix(max(1, n / 2))), positive: true, seed: deriveSeed(options.seed, 12))
        // The living room at scale too: half as many queries per condition.
        for (k, key) in Condition.livingRoom.enumerated() {
            guard let condition = Condition.all.first(where: { $0.key == key }), maker.unavailable(condition) == nil else { continue }
            try add(condition, Array(positivePlans.prefix(max(1, n / 2))), positive: true, seed: deriveSeed(options.seed, 100 + UInt64(k)))
        }
        try add(clean, Preparation.negativePlans(p, count: n, seed: deriveSeed(options.seed, 0x5CA1E)), positive: false,
                seed: deriveSeed(options.seed, 13))
        // What a box by the TV hears when nothing of the catalog plays (the calibration of
        // confidence): people talking alone, noise alone, other music with people talking over
        // it, and other music in a room.
        for (k, negative) in NegativeKind.all.enumerated() {
            let recordings = try negative.recordings(p, maker: maker, seed: deriveSeed(options.seed, 0xCA1, UInt64(k)))
            guard !recordings.isEmpty, let condition = Condition.all.first(where: { $0.key == negative.condition }),
                  maker.unavailable(condition) == nil else { continue }
            let plans = QueryPlanner.plan(count: n, sources: Array(recordings.indices), recordings: recordings,
                                          seed: deriveSeed(options.seed, 0xCA2, UInt64(k)))
            try add(condition, plans, positive: false, seed: deriveSeed(options.seed, 0xCA3, UInt64(k)), kind: negative.key,
                    from: recordings)
        }
        let queryFile = "\(workDirectory)/scale-queries.bin"
        try Data(encoded).write(to: URL(fileURLWithPath: queryFile))

        let opens = options.quick ? 10 : 20
        say("probing the corpus catalog and the scale catalog in fresh processes (\(opens) opens, \(queries.count) queries each)")
        let small = try probe(catalog: p.catalogPath, queries: queryFile, opens: opens)
        let large = try probe(catalog: path, queries: queryFile, opens: opens)
        if !options.keepWork { try? FileManager.default.removeItem(atPath: path) }
        var format1: (bytes: Int, probe: ProbeResult)?
        if let format1Bytes {
            say("probing the scale catalog in format 1, as earlier releases wrote it")
            let format1Path = "\(workDirectory)/scale-format1.earcat"
            try AtomicFile.write(format1Bytes, to: format1Path)
            format1 = (format1Bytes.count, try probe(catalog: format1Path, queries: queryFile, opens: opens))
            if !options.keepWork { try? FileManager.default.removeItem(atPath: format1Path) }
        }

        var signatureOf: [String: Signature] = [:]
        for (k, i) in p.catalogFiles.enumerated() { signatureOf[p.corpus.files[i].id] = p.signatures[k] }
        let report = ScaleReport(hours: hours, realHours: realSeconds / 3600, references: references,
                                 fillerPeaksPerSecond: fillerDuration > 0 ? Double(fillerPeaks) / fillerDuration : 0,
                                 generateSeconds: generateSeconds, buildSeconds: buildSeconds, fileBytes: fileBytes, indexBytes: indexBytes,
                                 entries: entries, queries: queries, small: small, large: large, format1: format1,
                                 smallBytes: p.catalogBytes, smallHours: realSeconds / 3600,
                                 calibrationSmall: Calibration.rows(queries, small, signatures: signatureOf),
                                 calibrationLarge: Calibration.rows(queries, large, signatures: signatureOf),
                                 shippedSmall: Calibration.shipped(queries, small, signatures: signatureOf),
                                 shippedLarge: Calibration.shipped(queries, large, signatures: signatureOf),
                                 requiredSmall: Matcher.requiredInliers(entryCount: p.entryCount),
                                 requiredLarge: Matcher.requiredInliers(entryCount: entries))
        for (name, r) in [("corpus", small), ("scale", large)] {
            let (ok, total) = report.recall("clean10", in: r)
            let (okN, totalN) = report.recall("noise0", in: r)
            let (fp, neg) = report.falsePositives(in: r)
            say(String(format: "  %@ catalog: open first %.3f ms, median %.3f ms; RSS %.1f → %.1f MB after open → %.1f MB after queries (file-backed %.1f MB); match p50/p99 %@/%@ ms; recall clean %d/%d, noise %d/%d; FP %d/%d",
                       name as NSString, r["open_first_ms"] ?? -1, r["open_median_ms"] ?? -1,
                       (r["rss_start_kb"] ?? 0) / 1024, (r["rss_after_open_kb"] ?? 0) / 1024,
                       (r["rss_after_queries_kb"] ?? 0) / 1024, (r["rssfile_after_queries_kb"] ?? 0) / 1024,
                       Fmt.f(Stats.percentile(r.matchTimes, 50), 2) as NSString,
                       Fmt.f(Stats.percentile(r.matchTimes, 99), 2) as NSString, ok, total, okN, totalN, fp, neg))
        }
        return report
    }

    /// Runs `earshot-bench _probe` on a catalog file and parses what it prints.
    static func probe(catalog: String, queries: String, opens: Int) throws -> ProbeResult {
        let r = try Shell.run(Machine.executablePath(),
                              ["_probe", "--catalog", catalog, "--query-file", queries, "--opens", String(opens)])
        guard r.status == 0 else { throw BenchError("probe of \(catalog) failed: \(r.error)") }
        var result = ProbeResult()
        for line in r.output.split(separator: "\n") {
            let f = line.split(separator: " ").map(String.init)
            if f.count == 5, f[0] == "c" {
                result.candidates.append((f[3] == "-" ? nil : f[3], Int(f[2]) ?? 0, Double(f[4]) ?? 0))
            } else if f.count == 7, f[0] == "q" {
                result.queries.append((f[2] == "-" ? nil : f[2], Double(f[3]) ?? 0, Double(f[4]) ?? 0, Double(f[5]) ?? 0,
                                       Double(f[6]) ?? 0))
            } else if f.count == 2, let v = Double(f[1]) {
                result.values[f[0]] = v
            }
        }
        return result
    }
}

/// Filler references: random peaks with the corpus's statistics. Inter-peak time gaps and
/// (bin, magnitude) pairs are drawn from the real reference signatures, so peak density and
/// frequency distribution match; the joint structure of real music (harmonics, repeats) does not.
struct FillerPeaks {
    private var gaps: [Float] = []
    private var points: [(Float, Float)] = []

    init(_ p: Prepared) throws {
        for s in p.signatures {
            var previous: Float?
            for peak in s.peaks {
                if let previous { gaps.append(max(0, peak.time - previous)) }
                previous = peak.time
                points.append((peak.bin, peak.magnitude))
            }
        }
        guard !gaps.isEmpty else { throw BenchError("the corpus signatures hold no peaks") }
    }

    func signature(duration: Double, rng: inout SeededRandom) throws -> Signature {
        let frames = Float(duration) / Float(FingerprintParameters.hopDuration)
        var peaks: [Peak] = []
        peaks.reserveCapacity(Int(Double(duration) * 60))
        var t: Float = 0
        while true {
            t += gaps[Int(rng.next() % UInt64(gaps.count))]
            if t >= frames - 1 { break }
            let (bin, magnitude) = points[Int(rng.next() % UInt64(points.count))]
            peaks.append(Peak(time: t, bin: bin, magnitude: magnitude))
        }
        return try Signature(duration: duration, peaks: peaks)
    }
}

/// The child process of the scale benchmark: measures opening and matching in a process that
/// holds nothing else.
enum Probe {
    static func run(_ o: Options) throws -> Int32 {
        // Queries are read before any measurement so their memory is already in the baseline.
        let data = [UInt8](try Data(contentsOf: URL(fileURLWithPath: o.probeQueries)))
        var signatures: [Signature] = []
        var at = 0
        while at + 4 <= data.count {
            let n = Int(UInt32(data[at]) | UInt32(data[at + 1]) << 8 | UInt32(data[at + 2]) << 16 | UInt32(data[at + 3]) << 24)
            at += 4
            guard at + n <= data.count else { throw BenchError("query file truncated") }
            signatures.append(try Signature(dataRepresentation: Array(data[at..<(at + n)])))
            at += n
        }
        func emit(_ key: String, _ value: Double) { print("\(key) \(value)") }
        emit("rss_start_kb", Double(ProcStatus.kilobytes("VmRSS") ?? 0))
        emit("rssfile_start_kb", Double(ProcStatus.kilobytes("RssFile") ?? 0))
        emit("rssanon_start_kb", Double(ProcStatus.kilobytes("RssAnon") ?? 0))
        var times: [Double] = []
        for _ in 0..<max(1, o.probeOpens) {
            let t = Clock.now()
            let c = try MappedCatalog(contentsOf: o.probeCatalog, verification: .structure)
            times.append((Clock.now() - t) * 1000)
            _ = c.entryCount
        }
        emit("open_first_ms", times[0])
        emit("open_median_ms", Stats.median(times)!)
        emit("open_max_ms", times.max()!)
        let catalog = try MappedCatalog(contentsOf: o.probeCatalog, verification: .structure)
        emit("rss_after_open_kb", Double(ProcStatus.kilobytes("VmRSS") ?? 0))
        emit("rssfile_after_open_kb", Double(ProcStatus.kilobytes("RssFile") ?? 0))
        emit("rssanon_after_open_kb", Double(ProcStatus.kilobytes("RssAnon") ?? 0))
        emit("catalog_bytes", Double(catalog.byteCount))
        emit("mapped_after_open_kb", Double(ProcStatus.mappedKilobytes(of: o.probeCatalog) ?? -1))
        // The full check every catalog gets when the daemon loads it (and the CLI maps it):
        // its time, the peak RSS while it runs ("5" to clear_refs resets VmHWM) and RSS after.
        emit("rss_before_full_check_kb", Double(ProcStatus.kilobytes("VmRSS") ?? 0))
        _ = try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
        let t = Clock.now()
        let checked = try MappedCatalog(contentsOf: o.probeCatalog, verification: .full)
        emit("full_check_ms", (Clock.now() - t) * 1000)
        emit("full_check_hwm_kb", Double(ProcStatus.kilobytes("VmHWM") ?? 0))
        emit("rss_after_full_check_kb", Double(ProcStatus.kilobytes("VmRSS") ?? 0))
        _ = checked.entryCount
        let matcher = Matcher(catalog: catalog)
        if let limit = o.probeCoarsePostingLimit { matcher.coarsePostingLimit = limit }
        for (i, s) in signatures.enumerated() {
            let t = Clock.now(), c = Clock.threadCPU()
            let result = matcher.match(s)
            let ms = (Clock.now() - t) * 1000, cpu = (Clock.threadCPU() - c) * 1000
            if let top = result.mediaItems.first {
                print("q \(i) \(top.mediaItem.id) \(top.matchOffset) \(top.confidence) \(ms) \(cpu)")
            } else {
                print("q \(i) - 0 0 \(ms) \(cpu)")
            }
        }
        emit("rss_after_queries_kb", Double(ProcStatus.kilobytes("VmRSS") ?? 0))
        emit("mapped_after_queries_kb", Double(ProcStatus.mappedKilobytes(of: o.probeCatalog) ?? -1))
        emit("rssfile_after_queries_kb", Double(ProcStatus.kilobytes("RssFile") ?? 0))
        emit("rssanon_after_queries_kb", Double(ProcStatus.kilobytes("RssAnon") ?? 0))
        emit("hwm_kb", Double(ProcStatus.kilobytes("VmHWM") ?? 0))
        // Calibration, after everything measured: each query's best candidate with the evidence
        // floor lowered to where chance alignments show.
        matcher.evidenceFloor = Calibration.floor
        matcher.peakSearchBins = 0  // aligned anchors alone: the peak search's places have 2 and up
        for (i, s) in signatures.enumerated() {
            if let top = matcher.referenceCandidates(s).first {
                let id = catalog.mediaItems(ofReference: top.referenceIndex).first?.id ?? "-"
                print("c \(i) \(top.inliers) \(id) \(top.offset)")
            } else {
                print("c \(i) 0 - 0")
            }
        }
        fflush(nil)
        return 0
    }
}
