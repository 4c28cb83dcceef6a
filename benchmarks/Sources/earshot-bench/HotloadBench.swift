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

/// The catalog hot-load benchmark: `earshotd` (release, CURVE on as shipped) on
/// loopback takes catalogs over the network while clients call `Match`. A 100 MB push end to
/// end, 100 swaps under 20 clients' `Match` load (latency, errors, memory, mappings and
/// descriptors after), five enabled catalogs against one of the same total size, and the time
/// from a 100-hour catalog's last byte to the first match that comes from it.
struct HotloadReport {
    /// One upload, as the client saw it.
    struct Push {
        var name = ""
        var bytes = 0
        var chunkBytes = 0
        /// BeginUpload sent → CommitUpload answered.
        var seconds = 0.0
        /// BeginUpload sent → last chunk answered.
        var uploadSeconds = 0.0
        /// Last chunk answered → CommitUpload answered.
        var commitSeconds = 0.0
        /// The server's own time for the commit (CommitUploadResponse.install_milliseconds).
        var installMilliseconds = 0.0
        /// Round trip of each UploadChunk call (ms).
        var chunkMilliseconds: [Double] = []
        var version: UInt64 = 0
        var replaced = false

        var megabytesPerSecond: Double { Double(bytes) / 1e6 / seconds }
        var uploadMegabytesPerSecond: Double { Double(bytes) / 1e6 / uploadSeconds }
    }

    /// `Match` calls of several clients back to back.
    struct Load {
        var clients = 0
        var seconds = 0.0
        var latencies: [Double] = []
        var rpcErrors = 0
        var errorSamples: [String] = []
        /// Answered, but not a match of the programme (no match, recognition error, another item).
        var notTheProgramme = 0
        var noMatch = 0
        /// Answers with outcome ERROR (the call worked, the recognition did not).
        var errorOutcomes = 0
        var outcomeSamples: [String] = []
        /// When each NO_MATCH answer arrived (Clock seconds).
        var noMatchTimes: [Double] = []
        /// When each answered call ended (Clock seconds), in `latencies` order.
        var endTimes: [Double] = []
        /// (catalog, version) pairs the results' top items came from.
        var sources: Set<String> = []
        var p99: Double? { Stats.percentile(latencies, 99) }
    }

    /// What the daemon holds at a moment.
    struct Footprint {
        var rssMB = 0.0
        var anonMB = 0.0
        var fileMB = 0.0
        /// Lines of /proc/PID/maps naming a catalog file (".earcat", also "… (deleted)").
        var catalogMappings = 0
        /// Of them, mappings of files no longer in the folder (a replaced version still mapped).
        var deletedMappings = 0
        var descriptors = 0
    }

    var catalogSource = ""
    var programme = ""
    var chunkBytes = 1 << 20
    // The catalogs.
    var bigBytes = 0
    var bigHours = 0.0
    var bigReferences = 0
    var partBytes: [Int] = []
    var partHours: [Double] = []
    var swapBytes: [Int] = []
    var buildSeconds = 0.0
    var clientHashSeconds = 0.0

    // 1. The 100 MB push; 4. its install and first match.
    var push = Push()
    var lastChunkToCommitMs = 0.0
    var commitToFirstMatchMs = 0.0
    var matchesUntilFirst = 0
    var firstMatch = ""

    // 2. Swaps under load.
    var swapClients = 20
    var swapTarget = 0
    var quiet = Load()
    var swapping = Load()
    var swaps: [Push] = []
    var swapFailures: [String] = []
    var swapSeconds = 0.0
    var warmup = Push()
    var beforeWarmup = Footprint()
    var before = Footprint()
    var after = Footprint()
    var settleSeconds = 0.0
    /// When each swap's CommitUpload was answered (Clock seconds).
    var commitTimes: [Double] = []
    /// Daemon RSS (MB) after every quarter of the swaps: (swaps done, RSS, anonymous).
    var rssDuringSwaps: [(swaps: Int, rss: Double, anon: Double)] = []

    // 3. Five catalogs against one.
    var one = Load()
    var five = Load()
    var oneSignature: [Double] = []
    var fiveSignature: [Double] = []
    /// Matcher.match in the benchmark process, p50 ms: (what, positive query, negative query).
    var inProcess: [(what: String, positive: Double, negative: Double)] = []
    /// The held-out file the negative excerpt comes from, and what big and the set answered for it.
    var negativeQuery = ""

    // Where the push time goes.
    var diagnostics: [(what: String, result: String)] = []
}

enum HotloadBenchmark {
    static let clients = 20

    static func run(options: Options, prepared p: Prepared, workDirectory: String) throws -> HotloadReport {
        var r = HotloadReport()
        r.catalogSource = p.corpus.description
        let quick = options.quick
        let targetMB = quick ? 20.0 : 100.0
        r.swapTarget = quick ? 20 : 100
        let phaseMinimum = quick ? 8.0 : 20.0

        // The programme: the longest catalog file, played in real time (and looped).
        let file = p.catalogFiles.max { p.corpus.files[$0].duration < p.corpus.files[$1].duration }!
        let programmeSeconds = min(600, p.corpus.files[file].duration - 10)
        let programme = try LiveBenchmark.programmeWAV(p, file, start: 10, seconds: programmeSeconds, speed: 1, workDirectory)
        let expectedID = p.corpus.files[file].id
        r.programme = String(format: "`%@` from 10 s, %.0f s, looped", expectedID, programmeSeconds)

        // Catalogs. The big one: the corpus catalog's references plus filler (as the scale
        // benchmark makes them) up to ≈ targetMB; its references, dealt round-robin, make the five
        // parts. The swapped pair: the corpus catalog and the same references in reverse order.
        let t0 = Clock.now()
        let filler = try FillerPeaks(p)
        var references: [(Signature, MediaItem)] = []
        for (k, i) in p.catalogFiles.enumerated() {
            let f = p.corpus.files[i]
            references.append((p.signatures[k], MediaItem(id: f.id, title: f.name)))
        }
        // Filler indexes as densely as the corpus (the scale benchmark measures both alike), so the
        // corpus catalog's bytes per hour size the big one near targetMB under any index.
        let swapA = [UInt8](try Data(contentsOf: URL(fileURLWithPath: p.catalogPath)))
        let hours = targetMB * Double(1 << 20) / (Double(swapA.count) / (p.catalogDuration / 3600))
        var fillerSeconds = max(0, hours * 3600 - p.catalogDuration)
        var rng = SeededRandom(seed: deriveSeed(options.seed, 0x407))
        var index = 0
        while fillerSeconds > 1 {
            let duration = min(ScaleBenchmark.fillerReferenceSeconds, fillerSeconds)
            references.append((try filler.signature(duration: duration, rng: &rng), MediaItem(id: String(format: "filler-%04d", index))))
            fillerSeconds -= duration
            index += 1
        }
        func encode(_ refs: [(Signature, MediaItem)]) throws -> (bytes: [UInt8], hours: Double) {
            var c = CustomCatalog()
            for (s, item) in refs { try c.addReferenceSignature(s, representing: [item]) }
            return (try c.dataRepresentation(), c.totalDuration / 3600)
        }
        let big = try encode(references)
        r.bigBytes = big.bytes.count
        r.bigHours = big.hours
        r.bigReferences = references.count
        var parts: [[UInt8]] = []
        for k in 0..<5 {
            let part = try encode(references.enumerated().filter { $0.offset % 5 == k }.map(\.element))
            parts.append(part.bytes)
            r.partBytes.append(part.bytes.count)
            r.partHours.append(part.hours)
        }
        references = []
        let swapB = try encode(p.catalogFiles.enumerated().reversed().map { k, i in
            (p.signatures[k], MediaItem(id: p.corpus.files[i].id, title: p.corpus.files[i].name))
        }).bytes
        r.swapBytes = [swapA.count, swapB.count]
        r.buildSeconds = Clock.now() - t0
        say(String(format: "hotload: catalogs built in %.1f s: big %@ (%.1f h, %d references); parts %@; swapped pair %@ / %@",
                   r.buildSeconds, Fmt.bytes(r.bigBytes), r.bigHours, r.bigReferences,
                   r.partBytes.map { Fmt.bytes($0) }.joined(separator: ", "), Fmt.bytes(swapA.count), Fmt.bytes(swapB.count)))
        // The client's digest, as `earshot remote catalog push` computes it before sending.
        let h0 = Clock.now()
        let bigSHA = big.bytes.withUnsafeBytes { SHA256.hash($0) }
        r.clientHashSeconds = Clock.now() - h0
        let partSHA = parts.map { b in b.withUnsafeBytes { SHA256.hash($0) } }
        let shaA = swapA.withUnsafeBytes { SHA256.hash($0) }, shaB = swapB.withUnsafeBytes { SHA256.hash($0) }

        // The daemon: the swapped catalog as "live", CURVE on, an admin key for catalog calls and
        // an operator key for the Match clients.
        let daemonPath = try DaemonProcess.releaseBinary()
        let state = try DaemonProcess.stateFolder(in: workDirectory, named: "hotload-state", catalog: p.catalogPath)
        try FileManager.default.moveItem(atPath: "\(state)/catalogs/corpus.earcat", toPath: "\(state)/catalogs/live.earcat")
        let admin = try CurveKeyPair.generate(), viewer = try CurveKeyPair.generate()
        try AtomicFile.write(Array("\(admin.publicKey) admin admin\n\(viewer.publicKey) matcher operator\n".utf8),
                             to: "\(state)/clients.allow")
        let daemon = try DaemonProcess(path: daemonPath, state: state, programme: programme,
                                       settings: ["--session.follow=false", "--catalogs.max_upload_bytes=\(max(512 << 20, 2 * r.bigBytes))"])
        defer { daemon.stop() }
        let serverKey = try DaemonProcess.serverPublicKey(state: state)
        var adminConfiguration = RpcClient.Configuration()
        adminConfiguration.security = ClientSecurity(serverPublicKey: serverKey, keyPair: admin)
        let adminClient = try RpcClient(endpoint: daemon.rpc, configuration: adminConfiguration)
        defer { adminClient.close() }
        var matchConfiguration = RpcClient.Configuration()
        matchConfiguration.security = ClientSecurity(serverPublicKey: serverKey, keyPair: viewer)
        let loop = try TransportLoop()
        loop.start()
        defer { loop.stop() }
        let matchClients = try (0..<clients).map { _ in try RpcClient(loop: loop, endpoint: daemon.rpc, configuration: matchConfiguration) }
        defer { for c in matchClients { c.close() } }
        let signatureClient = try RpcClient(endpoint: daemon.rpc, configuration: matchConfiguration)
        defer { signatureClient.close() }
        Thread.sleep(forTimeInterval: 5)  // ≥ 3 s heard: Match answers from the prepared window
        // Every connection's handshake done before anything is timed.
        _ = load(matchClients, seconds: 1, expectedID: expectedID)

        // 2. Swaps of "live" (A, B, A, …) while 20 clients call Match back to back; the same load
        // without swaps first, as long.
        r.beforeWarmup = footprint(daemon)
        r.warmup = try push(adminClient, "live", swapB, shaB, enable: true, chunk: r.chunkBytes)
        Thread.sleep(forTimeInterval: 1)
        let phase = max(phaseMinimum, 2 * Double(r.swapTarget) * r.warmup.seconds)
        say(String(format: "hotload: warm-up swap %.0f ms (install %.1f ms); phases of %.0f s with %d clients", r.warmup.seconds * 1000,
                   r.warmup.installMilliseconds, phase, clients))
        r.quiet = load(matchClients, seconds: phase, expectedID: expectedID)
        say("  no swaps: \(summary(r.quiet))")
        Thread.sleep(forTimeInterval: 1)
        r.before = footprint(daemon)
        let running = startLoad(matchClients, seconds: phase, expectedID: expectedID)
        let s0 = Clock.now()
        for k in 0..<r.swapTarget {
            let due = s0 + phase * Double(k) / Double(r.swapTarget)
            let wait = due - Clock.now()
            if wait > 0 { Thread.sleep(forTimeInterval: wait) }
            let even = k % 2 == 0
            do {
                r.swaps.append(try push(adminClient, "live", even ? swapA : swapB, even ? shaA : shaB, enable: true, chunk: r.chunkBytes))
                r.commitTimes.append(Clock.now())
                if (k + 1) % max(1, r.swapTarget / 4) == 0 {
                    r.rssDuringSwaps.append((k + 1, daemon.residentMegabytes, ProcStatus.megabytes("RssAnon", pid: daemon.pid) ?? 0))
                }
            } catch {
                r.swapFailures.append("\(error)")
            }
        }
        r.swapSeconds = Clock.now() - s0
        r.swapping = running.wait()
        say(String(format: "  %d swaps in %.1f s (%d failed): ", r.swaps.count, r.swapSeconds, r.swapFailures.count) + summary(r.swapping))
        let (near, covered) = nearCommits(r.swapping.noMatchTimes, r.commitTimes, within: 0.05, phase: r.swapping.seconds)
        say(String(format: "  %d of %d NO_MATCH answers within 50 ms of a commit reply (windows covering %.1f %% of the phase)", near,
                   r.swapping.noMatch, 100 * covered))
        let (nearCalls, restCalls) = splitNearCommits(r.swapping, r.commitTimes, within: 0.05)
        say(String(format: "  Match p99 of calls ending within 50 ms of a commit reply %@ ms (%d calls), of the others %@ ms (%d calls)",
                   Fmt.f(Stats.percentile(nearCalls, 99), 2) as NSString, nearCalls.count, Fmt.f(Stats.percentile(restCalls, 99), 2) as NSString,
                   restCalls.count))
        // Old versions are unmapped when the last match on them lets go: wait for that (≤ 10 s).
        let settle0 = Clock.now()
        repeat {
            Thread.sleep(forTimeInterval: 0.5)
            r.after = footprint(daemon)
        } while Clock.now() - settle0 < 10
            && (r.after.catalogMappings > r.before.catalogMappings || r.after.descriptors > r.before.descriptors)
        r.settleSeconds = Clock.now() - settle0
        say("  RSS while swapping: " + r.rssDuringSwaps.map { String(format: "%d: %.1f MB (anon %.1f)", $0.swaps, $0.rss, $0.anon) }.joined(separator: ", "))
        say(String(format: "  daemon before: RSS %.1f MB, %d catalog mappings, %d descriptors; after (%.1f s): RSS %.1f MB, %d mappings (%d deleted), %d descriptors",
                   r.before.rssMB, r.before.catalogMappings, r.before.descriptors, r.settleSeconds, r.after.rssMB, r.after.catalogMappings,
                   r.after.deletedMappings, r.after.descriptors))

        // 1 and 4. The 100 MB push (a 100-hour catalog holding the programme), then Match until a
        // result comes from it.
        let bigBytes = big.bytes
        let (bigPush, firstMs, attempts, first) = try DaemonBenchmark.blocking { () throws(RpcError) in
            let pushed = try await pushAsync(adminClient, "big", bigBytes, bigSHA, enable: true, chunk: 1 << 20)
            let t = Clock.now()
            var n = 0
            while true {
                n += 1
                let m = try await adminClient.call(Methods.Recognizer.match, Earshot_V1_MatchRequest(), timeout: .seconds(30))
                if let item = m.items.first(where: { $0.catalog == "big" }) {
                    return (pushed, (Clock.now() - t) * 1000, n, "\(item.mediaItem.id) from big v\(item.catalogVersion)")
                }
                if Clock.now() - t > 30 { throw RpcError(.deadlineExceeded, "no match from the new catalog within 30 s") }
            }
        }
        r.push = bigPush
        r.lastChunkToCommitMs = bigPush.commitSeconds * 1000
        r.commitToFirstMatchMs = firstMs
        r.matchesUntilFirst = attempts
        r.firstMatch = first
        say(String(format: "hotload: push of %@ in %.2f s = %.1f MB/s (chunks %.2f s = %.1f MB/s; commit %.0f ms, install_milliseconds %.1f); first match from it %.0f ms after the commit reply (%d Match calls: %@)",
                    Fmt.bytes(bigPush.bytes), bigPush.seconds, bigPush.megabytesPerSecond, bigPush.uploadSeconds,
                    bigPush.uploadMegabytesPerSecond, bigPush.commitSeconds * 1000, bigPush.installMilliseconds, firstMs, attempts,
                    first as NSString))

        // Where the push time goes (the log's "diagnosis:" lines).
        r.diagnostics = try diagnose(r, adminClient, bigBytes, bigSHA, workDirectory: workDirectory, daemonPath: daemonPath,
                                     state: state, programme: programme)

        // 3. One catalog (big) against five of the same references (part1…5).
        let query = try Fingerprint.signature(of: Array(p.corpus.files[file].samples[Int(60 * FingerprintParameters.sampleRate)..<Int(70 * FingerprintParameters.sampleRate)]))
        let queryBytes = Data(query.dataRepresentation)
        try setEnabled(adminClient, "live", false)
        _ = load(matchClients, seconds: 2, expectedID: expectedID)  // warm: pages of the new set touched
        r.one = load(matchClients, seconds: phase, expectedID: expectedID)
        r.oneSignature = try signatureTimes(signatureClient, queryBytes, count: quick ? 50 : 200)
        say("  one catalog (big): \(summary(r.one)); MatchSignature p99 \(Fmt.f(Stats.percentile(r.oneSignature, 99), 2)) ms")
        for k in 0..<5 { _ = try push(adminClient, "part\(k + 1)", parts[k], partSHA[k], enable: false, chunk: r.chunkBytes) }
        for k in 0..<5 { try setEnabled(adminClient, "part\(k + 1)", true) }
        try setEnabled(adminClient, "big", false)
        _ = load(matchClients, seconds: 2, expectedID: expectedID)
        r.five = load(matchClients, seconds: phase, expectedID: expectedID)
        r.fiveSignature = try signatureTimes(signatureClient, queryBytes, count: quick ? 50 : 200)
        say("  five catalogs (part1…5): \(summary(r.five)); MatchSignature p99 \(Fmt.f(Stats.percentile(r.fiveSignature, 99), 2)) ms")
        if !daemon.process.isRunning { throw BenchError("earshotd died; see \(daemon.log)") }
        daemon.stop()

        // Why five cost what they cost: Matcher.match in this process, the programme excerpt and
        // an excerpt of a held-out file (in no catalog), against big, each part, and the set of five.
        let negativeFile = p.heldOutFiles.first ?? file
        let negative = try Fingerprint.signature(of: Array(p.corpus.files[negativeFile].samples[Int(30 * FingerprintParameters.sampleRate)..<Int(40 * FingerprintParameters.sampleRate)]))
        func timed(_ match: (Signature) -> MatchResult) -> (Double, Double) {
            for _ in 0..<3 { _ = match(query); _ = match(negative) }
            var a: [Double] = [], b: [Double] = []
            for _ in 0..<(quick ? 20 : 50) {
                var t = Clock.now()
                _ = match(query)
                a.append((Clock.now() - t) * 1000)
                t = Clock.now()
                _ = match(negative)
                b.append((Clock.now() - t) * 1000)
            }
            return (Stats.median(a)!, Stats.median(b)!)
        }
        var members: [CatalogSet.Member] = []
        for (k, bytes) in ([big.bytes] + parts).enumerated() {
            let path = "\(workDirectory)/hotload-\(k).earcat"
            try AtomicFile.write(bytes, to: path)
            let catalog = try MappedCatalog(contentsOf: path)
            let matcher = Matcher(catalog: catalog)
            let holds = k == 0 || (0..<catalog.referenceCount).contains { catalog.mediaItems(ofReference: $0).contains { $0.id == expectedID } }
            let (a, b) = timed { matcher.match($0) }
            r.inProcess.append((k == 0 ? "big (holds the programme)" : "part\(k)\(holds ? " (holds the programme)" : "")", a, b))
            if k > 0 { members.append(CatalogSet.Member(name: "part\(k)", version: 1, catalog: catalog)) }
        }
        let set = CatalogSetMatcher(CatalogSet(members))
        let (a, b) = timed { set.match($0) }
        r.inProcess.append(("CatalogSetMatcher over part1…5", a, b))
        func answer(_ m: MatchResult) -> String {
            if case .match(let items) = m, let top = items.first {
                return String(format: "%@%@ (confidence %.2f)", top.mediaItem.id as NSString, (top.catalogName.isEmpty ? "" : " in \(top.catalogName)") as NSString, top.confidence)
            }
            return "no match"
        }
        let bigMatcher = Matcher(catalog: try MappedCatalog(contentsOf: "\(workDirectory)/hotload-0.earcat"))
        r.negativeQuery = "`\(p.corpus.files[negativeFile].id)` 30–40 s; big answers \(answer(bigMatcher.match(negative))), the set of five \(answer(set.match(negative)))"
        say("  held-out excerpt: \(r.negativeQuery)")
        for row in r.inProcess { say(String(format: "  in process, Matcher.match p50: %@: programme %.2f ms, held-out %.2f ms", row.what as NSString, row.positive, row.negative)) }
        return r
    }

    // MARK: Pushing

    static func push(_ client: RpcClient, _ name: String, _ bytes: [UInt8], _ sha: [UInt8], enable: Bool, chunk: Int) throws -> HotloadReport.Push {
        try DaemonBenchmark.blocking { () throws(RpcError) in try await pushAsync(client, name, bytes, sha, enable: enable, chunk: chunk) }
    }

    /// BeginUpload → UploadChunk × n (one at a time, each waiting for its acknowledgement, as
    /// `earshot remote catalog push` does) → CommitUpload.
    static func pushAsync(_ client: RpcClient, _ name: String, _ bytes: [UInt8], _ sha: [UInt8], enable: Bool,
                          chunk: Int) async throws(RpcError) -> HotloadReport.Push {
        var r = HotloadReport.Push(name: name, bytes: bytes.count, chunkBytes: chunk)
        let timeout = Duration.seconds(120)
        let t0 = Clock.now()
        var begin = Earshot_V1_BeginUploadRequest()
        begin.name = name
        begin.size = UInt64(bytes.count)
        begin.sha256 = Data(sha)
        begin.enable = enable
        let status = try await client.call(Methods.Catalogs.beginUpload, begin, timeout: timeout)
        var held = Int(status.offset)
        var request = Earshot_V1_UploadChunkRequest()
        request.uploadID = status.uploadID
        while held < bytes.count {
            let end = min(bytes.count, held + chunk)
            request.offset = UInt64(held)
            request.data = bytes.withUnsafeBytes { Data(bytes: $0.baseAddress! + held, count: end - held) }
            let c = Clock.now()
            let reply = try await client.call(Methods.Catalogs.uploadChunk, request, timeout: timeout)
            r.chunkMilliseconds.append((Clock.now() - c) * 1000)
            guard Int(reply.offset) > held else { throw RpcError(.internal, "the upload did not move on from \(held)") }
            held = Int(reply.offset)
        }
        let t1 = Clock.now()
        var commit = Earshot_V1_UploadRequest()
        commit.uploadID = status.uploadID
        let reply = try await client.call(Methods.Catalogs.commitUpload, commit, timeout: timeout)
        let t2 = Clock.now()
        r.seconds = t2 - t0
        r.uploadSeconds = t1 - t0
        r.commitSeconds = t2 - t1
        r.installMilliseconds = reply.installMilliseconds
        r.version = reply.catalog.version
        r.replaced = reply.replaced
        return r
    }

    static func setEnabled(_ client: RpcClient, _ name: String, _ enabled: Bool) throws {
        var message = Earshot_V1_CatalogNameRequest()
        message.name = name
        let request = message
        _ = try DaemonBenchmark.blocking { () throws(RpcError) in
            try await client.call(enabled ? Methods.Catalogs.enable : Methods.Catalogs.disable, request)
        }
    }

    static func remove(_ client: RpcClient, _ name: String) throws {
        var message = Earshot_V1_CatalogNameRequest()
        message.name = name
        let request = message
        _ = try DaemonBenchmark.blocking { () throws(RpcError) in try await client.call(Methods.Catalogs.remove, request) }
    }

    /// Where the time of the 100 MB push goes: bigger chunks (fewer round trips and fdatasyncs),
    /// the same push without CURVE, and what the server's per-chunk disk work costs on this disk.
    static func diagnose(_ r: HotloadReport, _ client: RpcClient, _ bytes: [UInt8], _ sha: [UInt8], workDirectory: String,
                         daemonPath: String, state: String, programme: String) throws -> [(what: String, result: String)] {
        var rows: [(what: String, result: String)] = []
        func describe(_ p: HotloadReport.Push) -> String {
            String(format: "%.1f MB/s end to end (%.2f s); chunks alone %.1f MB/s; chunk round trip p50 %.1f ms, p99 %.1f ms; commit %.0f ms (install_milliseconds %.1f)",
                   p.megabytesPerSecond, p.seconds, p.uploadMegabytesPerSecond, Stats.percentile(p.chunkMilliseconds, 50) ?? -1,
                   Stats.percentile(p.chunkMilliseconds, 99) ?? -1, p.commitSeconds * 1000, p.installMilliseconds)
        }
        rows.append(("the push above (1 MiB chunks, CURVE)", describe(r.push)))
        for kib in [256, 2048, 3072] {
            let p = try push(client, "diag", bytes, sha, enable: false, chunk: kib << 10)
            try remove(client, "diag")
            rows.append(("the same file, \(kib >= 1024 ? "\(kib / 1024) MiB" : "\(kib) KiB") chunks, CURVE", describe(p)))
            say("  diagnosis: \(rows.last!.what): \(rows.last!.result)")
        }
        // The same push to a daemon without CURVE (its own state folder, no catalog).
        do {
            let plain = "\(workDirectory)/hotload-plain"
            try FileManager.default.createDirectory(atPath: "\(plain)/catalogs", withIntermediateDirectories: true)
            let d = try DaemonProcess(path: daemonPath, state: plain, programme: programme,
                                      settings: ["--session.follow=false", "--security.mode=none",
                                                 "--catalogs.max_upload_bytes=\(max(512 << 20, 2 * bytes.count))"])
            defer { d.stop() }
            let c = try RpcClient(endpoint: d.rpc)
            defer { c.close() }
            for kib in [1024, 3072] {
                let p = try push(c, "diag", bytes, sha, enable: false, chunk: kib << 10)
                try remove(c, "diag")
                rows.append(("the same file, \(kib / 1024) MiB chunks, no CURVE (security.mode = none)", describe(p)))
                say("  diagnosis: \(rows.last!.what): \(rows.last!.result)")
            }
        }
        // The server's per-chunk disk work (UploadArea.write → PartFile.write: pwrite, then
        // fdatasync before the acknowledgement), and its running SHA-256, in this process on the
        // same file system as the daemon's state folder.
        for (sync, label) in [(true, "pwrite + fdatasync per 1 MiB (what the server does per chunk)"), (false, "pwrite per 1 MiB, no fdatasync")] {
            let path = "\(workDirectory)/diag-\(sync).part"
            let fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw BenchError("cannot open \(path)") }
            var times: [Double] = []
            let t0 = Clock.now()
            var failed = false
            bytes.withUnsafeBytes { all in
                var at = 0
                while at < all.count {
                    let end = min(all.count, at + (1 << 20))
                    let t = Clock.now()
                    if pwrite(fd, all.baseAddress! + at, end - at, off_t(at)) != end - at { failed = true }
                    if sync, fdatasync(fd) != 0 { failed = true }
                    times.append((Clock.now() - t) * 1000)
                    at = end
                }
            }
            let total = Clock.now() - t0
            close(fd)
            try? FileManager.default.removeItem(atPath: path)
            if failed { throw BenchError("writing \(path) failed") }
            rows.append((label, String(format: "%.1f MB/s (%.2f s for %@); per piece p50 %.1f ms, p99 %.1f ms", Double(bytes.count) / 1e6 / total, total,
                                       Fmt.bytes(bytes.count), Stats.percentile(times, 50) ?? -1, Stats.percentile(times, 99) ?? -1)))
            say("  diagnosis: \(rows.last!.what): \(rows.last!.result)")
        }
        rows.append(("SHA-256 of the file in this process (the server hashes each chunk as it arrives)",
                     String(format: "%.0f MB/s (%.2f s)", Double(bytes.count) / 1e6 / r.clientHashSeconds, r.clientHashSeconds)))
        return rows
    }

    // MARK: Match load

    final class RunningLoad: @unchecked Sendable {
        let group = DispatchGroup()
        let calls = Locked<[(end: Double, ms: Double)]>([])
        let errors = SharedCounter()
        let other = SharedCounter()
        let noMatch = SharedCounter()
        let errorOutcomes = SharedCounter()
        let outcomeSamples = Locked<[String]>([])
        let noMatchTimes = Locked<[Double]>([])
        let samples = Locked<[String]>([])
        let sources = Locked<Set<String>>([])
        var clients = 0
        var started = 0.0

        func wait() -> HotloadReport.Load {
            group.wait()
            let calls = calls.withLock { $0 }
            return HotloadReport.Load(clients: clients, seconds: Clock.now() - started, latencies: calls.map(\.ms), rpcErrors: errors.count,
                                      errorSamples: samples.withLock { $0 }, notTheProgramme: other.count, noMatch: noMatch.count,
                                      errorOutcomes: errorOutcomes.count, outcomeSamples: outcomeSamples.withLock { $0 }, noMatchTimes: noMatchTimes.withLock { $0 },
                                      endTimes: calls.map(\.end), sources: sources.withLock { $0 })
        }
    }

    /// Every client calls Match back to back until `seconds` have passed.
    static func startLoad(_ clients: [RpcClient], seconds: Double, expectedID: String) -> RunningLoad {
        let run = RunningLoad()
        run.clients = clients.count
        run.started = Clock.now()
        let end = run.started + seconds
        for client in clients {
            run.group.enter()
            Task.detached { @Sendable in
                defer { run.group.leave() }
                while Clock.now() < end {
                    let t = Clock.now()
                    do throws(RpcError) {
                        let result = try await client.call(Methods.Recognizer.match, Earshot_V1_MatchRequest(), timeout: .seconds(10))
                        let end = Clock.now()
                        run.calls.withLock { $0.append((end, (end - t) * 1000)) }
                        if let top = result.items.first, result.outcome == .match, top.mediaItem.id == expectedID {
                            let source = "\(top.catalog) v\(top.catalogVersion)"
                            run.sources.withLock { _ = $0.insert(source) }
                        } else {
                            run.other.add()
                            switch result.outcome {
                            case .noMatch:
                                run.noMatch.add()
                                let now = Clock.now()
                                run.noMatchTimes.withLock { $0.append(now) }
                            case .error:
                                run.errorOutcomes.add()
                                let text = result.error.message
                                run.outcomeSamples.withLock { if $0.count < 3, !$0.contains(text) { $0.append(text) } }
                            default: break
                            }
                        }
                    } catch {
                        run.errors.add()
                        let text = "\(error.code): \(error.message)"
                        run.samples.withLock { if $0.count < 3 { $0.append(text) } }
                    }
                }
            }
        }
        return run
    }

    static func load(_ clients: [RpcClient], seconds: Double, expectedID: String) -> HotloadReport.Load {
        startLoad(clients, seconds: seconds, expectedID: expectedID).wait()
    }

    /// MatchSignature round trips of one 10 s query: every call matches the whole set.
    static func signatureTimes(_ client: RpcClient, _ signature: Data, count: Int) throws -> [Double] {
        var message = Earshot_V1_MatchSignatureRequest()
        message.signature = signature
        let request = message
        var times: [Double] = []
        for _ in 0..<count {
            let t = Clock.now()
            _ = try DaemonBenchmark.blocking { () throws(RpcError) in try await client.call(Methods.Recognizer.matchSignature, request) }
            times.append((Clock.now() - t) * 1000)
        }
        return times
    }

    static func summary(_ l: HotloadReport.Load) -> String {
        String(format: "%d calls in %.1f s, %d RPC errors, %d not the programme (%d no match, %d error outcomes %@); p50 %@ ms, p99 %@ ms; sources %@",
               l.latencies.count, l.seconds, l.rpcErrors, l.notTheProgramme, l.noMatch, l.errorOutcomes, "\(l.outcomeSamples)" as NSString,
               Fmt.f(Stats.percentile(l.latencies, 50), 2) as NSString, Fmt.f(l.p99, 2) as NSString, "\(l.sources.sorted())" as NSString)
    }

    /// How many of `times` fall within `within` seconds of one of `commits` (either side), and
    /// what share of a phase `seconds` long those windows cover.
    static func nearCommits(_ times: [Double], _ commits: [Double], within: Double, phase seconds: Double) -> (Int, Double) {
        let sorted = commits.sorted()
        let near = times.filter { t in sorted.contains { abs(t - $0) <= within } }.count
        var covered = 0.0, reach = -Double.infinity
        for c in sorted {
            covered += max(0, c + within - max(c - within, reach))
            reach = max(reach, c + within)
        }
        return (near, min(1, covered / seconds))
    }

    /// Latencies of calls that ended within `within` seconds of a commit reply, and of the rest.
    static func splitNearCommits(_ l: HotloadReport.Load, _ commits: [Double], within: Double) -> ([Double], [Double]) {
        let sorted = commits.sorted()
        var near: [Double] = [], rest: [Double] = []
        for (end, ms) in zip(l.endTimes, l.latencies) {
            // First commit at or after end − within.
            var lo = 0, hi = sorted.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if sorted[mid] < end - within { lo = mid + 1 } else { hi = mid }
            }
            if lo < sorted.count, sorted[lo] <= end + within { near.append(ms) } else { rest.append(ms) }
        }
        return (near, rest)
    }

    static func footprint(_ d: DaemonProcess) -> HotloadReport.Footprint {
        let maps = (ProcStatus.read("/proc/\(d.pid)/maps") ?? "").split(separator: "\n")
        let catalogs = maps.filter { $0.hasSuffix(".earcat") || $0.hasSuffix(".earcat (deleted)") }
        return HotloadReport.Footprint(rssMB: d.residentMegabytes, anonMB: ProcStatus.megabytes("RssAnon", pid: d.pid) ?? 0,
                                       fileMB: ProcStatus.megabytes("RssFile", pid: d.pid) ?? 0, catalogMappings: catalogs.count,
                                       deletedMappings: catalogs.filter { $0.hasSuffix("(deleted)") }.count, descriptors: d.openDescriptors)
    }
}

extension Report {
    static func hotloadSection(_ env: RunEnvironment, _ r: HotloadReport) -> String {
        func ms(_ v: Double?) -> String { Fmt.f(v, 2) }
        func verdict(_ ok: Bool?) -> String {
            switch ok {
            case .some(true): "PASS"
            case .some(false): "**short of target**"
            case .none: "n/a"
            }
        }
        let mb = { (n: Int) in String(format: "%.1f MB", Double(n) / 1e6) }
        var s = "## Catalog hot-load over the network\n\n" + runLine(env) + "\n\n"
        s += "`earshotd` (release) as a child process on loopback, **CURVE on** (the default; an admin key pushes, an operator key calls `Match`), "
            + "`session.follow = false`, a corpus file played in real time as the programme (\(r.programme)). Client and daemon share the machine "
            + "(\(env.cores) cores, \(env.cpu), \(env.memory); load average \(env.loadAverage) at start), the state folder is on the same disk as the "
            + "benchmark's temporary folder. Pushes are sequential as in `earshot remote catalog push`: BeginUpload, then UploadChunk of "
            + "\(r.chunkBytes >> 20) MiB each waiting for its acknowledgement (the server writes and fdatasyncs each before acknowledging), then "
            + "CommitUpload (full verification, fsync, rename, swap). MB = 10⁶ bytes.\n\n"
        s += "Catalogs (from \(r.catalogSource)): **big** \(mb(r.bigBytes)) = \(Fmt.f(r.bigHours)) h, \(r.bigReferences) references "
            + "(the corpus catalog's plus filler references made as in the scale benchmark); **part1…5** the same references dealt round-robin "
            + "into five files (\(r.partBytes.map(mb).joined(separator: ", ")); \(r.partHours.map { Fmt.f($0) }.joined(separator: ", ")) h); "
            + "**live** swapped between the corpus catalog (\(mb(r.swapBytes[0]))) and the same references in reverse order (\(mb(r.swapBytes[1]))). "
            + String(format: "Built in %.1f s.\n\n", r.buildSeconds)

        s += "| target | measured | target value | |\n|---|---|---|---|\n"
        let p = r.push
        s += "| 1. push of the \(mb(p.bytes)) catalog, BeginUpload → \(p.chunkMilliseconds.count) chunks → CommitUpload | "
            + String(format: "**%.1f MB/s** end to end (%.2f s): chunks %.2f s (%.1f MB/s; round trip p50 %.1f ms, p99 %.1f ms), commit %.0f ms, of it install_milliseconds %.1f (server) | ≥ 50 MB/s | %@ |\n",
                     p.megabytesPerSecond, p.seconds, p.uploadSeconds, p.uploadMegabytesPerSecond, Stats.percentile(p.chunkMilliseconds, 50) ?? -1,
                     Stats.percentile(p.chunkMilliseconds, 99) ?? -1, p.commitSeconds * 1000, p.installMilliseconds,
                     verdict(p.megabytesPerSecond >= 50) as NSString)
        let q = r.quiet, w = r.swapping
        s += "| 2a. \(r.swaps.count) swaps of **live** (\(r.swapFailures.count) failed) in \(Fmt.f(r.swapSeconds)) s while \(w.clients) clients call `Match` back to back | "
            + "\(w.rpcErrors) RPC errors in \(w.latencies.count + w.rpcErrors) calls\(w.errorSamples.isEmpty ? "" : " (\(w.errorSamples.joined(separator: "; ")))"); "
            + "answers with outcome ERROR \(w.errorOutcomes)\(w.outcomeSamples.isEmpty ? "" : " (\(w.outcomeSamples.joined(separator: "; ")))"), NO_MATCH \(w.noMatch), another item \(w.notTheProgramme - w.noMatch - w.errorOutcomes) "
            + "(without swaps: \(q.rpcErrors) RPC errors, \(q.errorOutcomes) ERROR, \(q.noMatch) NO_MATCH of \(q.latencies.count + q.rpcErrors)); "
            + "the programme's matches came from \(w.sources.count) versions of live | no `Match` fails | \(verdict(w.rpcErrors == 0 && w.errorOutcomes == 0 && r.swapFailures.isEmpty)) |\n"
        if w.noMatch > 0, !r.commitTimes.isEmpty {
            let (near, covered) = HotloadBenchmark.nearCommits(w.noMatchTimes, r.commitTimes, within: 0.05, phase: w.seconds)
            s += "| (NO_MATCH answers and swaps) | \(near) of the \(w.noMatch) NO_MATCH answers came within 50 ms (either side) of a swap's commit reply; "
                + "those windows cover \(Fmt.f(100 * covered)) % of the phase. Both phases hear different minutes of the programme (some passages match less often) | | |\n"
        }
        let ratio = (w.p99 ?? .infinity) / (q.p99 ?? .nan)
        s += "| 2b. `Match` p99 with swaps vs the same load without (\(Fmt.f(q.seconds)) s first, \(q.latencies.count) calls, \(q.rpcErrors) errors) | "
            + "\(ms(w.p99)) ms vs \(ms(q.p99)) ms = **\(Fmt.f(ratio, 2))×** (p50 \(ms(Stats.percentile(w.latencies, 50))) vs \(ms(Stats.percentile(q.latencies, 50))) ms; max \(ms(w.latencies.max())) vs \(ms(q.latencies.max())) ms) | ≤ 1.2× | \(verdict(ratio <= 1.2)) |\n"
        if !r.commitTimes.isEmpty, !w.endTimes.isEmpty {
            let (near, rest) = HotloadBenchmark.splitNearCommits(w, r.commitTimes, within: 0.05)
            s += "| (where the slower calls are) | calls ending within 50 ms of a swap's commit reply: p99 \(ms(Stats.percentile(near, 99))) ms (\(near.count) calls); "
                + "all others: p99 \(ms(Stats.percentile(rest, 99))) ms (\(rest.count) calls), against \(ms(q.p99)) ms without swaps | | |\n"
        }
        let rssDelta = r.after.rssMB - r.before.rssMB
        s += String(format: "| 2c. daemon RSS after the swaps (%.1f s after the last) vs before | %.1f → %.1f MB (**%+.1f MB**; anonymous %.1f → %.1f, file-backed %.1f → %.1f). Before the warm-up swap: %.1f MB | within 5 MB | %@ |\n",
                    r.settleSeconds, r.before.rssMB, r.after.rssMB, rssDelta, r.before.anonMB, r.after.anonMB, r.before.fileMB, r.after.fileMB,
                    r.beforeWarmup.rssMB, verdict(abs(rssDelta) <= 5) as NSString)
        if !r.rssDuringSwaps.isEmpty {
            s += "| (daemon RSS while swapping, under the load) | " + r.rssDuringSwaps.map { String(format: "after %d: %.1f MB (anonymous %.1f)", $0.swaps, $0.rss, $0.anon) }
                .joined(separator: "; ") + " | | |\n"
        }
        s += "| 2d. catalog mappings (lines of /proc/PID/maps ending in `.earcat` or `.earcat (deleted)`) | \(r.before.catalogMappings) → \(r.after.catalogMappings) (\(r.after.deletedMappings) of deleted files) | back to baseline | \(verdict(r.after.catalogMappings <= r.before.catalogMappings && r.after.deletedMappings == 0)) |\n"
        s += "| 2e. open descriptors (/proc/PID/fd) | \(r.before.descriptors) → \(r.after.descriptors) | back to baseline | \(verdict(r.after.descriptors <= r.before.descriptors)) |\n"
        let five99 = r.five.p99 ?? .infinity, one99 = r.one.p99 ?? .nan
        s += "| 3. `Match` p99, five enabled catalogs (part1…5) vs one (big), \(r.five.clients) clients back to back for \(Fmt.f(r.five.seconds)) s each | "
            + "\(ms(r.five.p99)) ms vs \(ms(r.one.p99)) ms = **\(Fmt.f(five99 / one99, 2))×** (p50 \(ms(Stats.percentile(r.five.latencies, 50))) vs \(ms(Stats.percentile(r.one.latencies, 50))) ms; "
            + "errors \(r.five.rpcErrors) / \(r.one.rpcErrors); not the programme \(r.five.notTheProgramme) / \(r.one.notTheProgramme)) | ≤ 2× | \(verdict(five99 / one99 <= 2)) |\n"
        let sig5 = Stats.percentile(r.fiveSignature, 99) ?? .infinity, sig1 = Stats.percentile(r.oneSignature, 99) ?? .nan
        if !r.inProcess.isEmpty {
            s += "| … `Matcher.match` in the benchmark process, p50 of a 10 s programme excerpt / of a held-out excerpt (in no catalog): "
                + r.inProcess.map { "\($0.what) \(Fmt.f($0.positive, 2)) / \(Fmt.f($0.negative, 2)) ms" }.joined(separator: "; ")
                + ". Held-out excerpt: \(r.negativeQuery) | | | |\n"
        }
        s += "| … `MatchSignature` of one 10 s excerpt (every call matches the whole set; \(r.oneSignature.count) calls each, one client) | "
            + "p99 \(ms(sig5)) ms vs \(ms(sig1)) ms = \(Fmt.f(sig5 / sig1, 2))× (p50 \(ms(Stats.percentile(r.fiveSignature, 50))) vs \(ms(Stats.percentile(r.oneSignature, 50))) ms) | (≤ 2×) | \(verdict(sig5 / sig1 <= 2)) |\n"
        let total = r.lastChunkToCommitMs + r.commitToFirstMatchMs
        s += String(format: "| 4. install to first match of the %.0f-hour catalog (big): last chunk's reply → CommitUpload reply → first `Match` with an item from big | **%.0f ms** = %.0f ms commit (install_milliseconds %.1f) + %.0f ms to the first such match (%d `Match` call(s): %@) | ≤ 2 s | %@ |\n",
                    r.bigHours, total, r.lastChunkToCommitMs, p.installMilliseconds, r.commitToFirstMatchMs, r.matchesUntilFirst, r.firstMatch as NSString,
                    verdict(total <= 2000) as NSString)
        if !r.swaps.isEmpty {
            let times = r.swaps.map { $0.seconds * 1000 }, installs = r.swaps.map(\.installMilliseconds)
            s += "| (each swap of live, under the load: push + commit) | p50 \(ms(Stats.percentile(times, 50))) ms, max \(ms(times.max())) ms; install_milliseconds p50 \(ms(Stats.percentile(installs, 50))), max \(ms(installs.max())) | | |\n"
        }

        // Where a push's time goes is a question of its own: the run prints its rows ("diagnosis:")
        // in the log, and benchmarks/studies/catalog-push-throughput.md holds the answer.
        if !r.diagnostics.isEmpty {
            s += "\nWhere a push's time goes (the same file with other chunk sizes, without CURVE, and the server's disk work and hashing "
                + "alone) is printed in the run's log (`diagnosis:` lines): [studies/catalog-push-throughput.md](studies/catalog-push-throughput.md).\n"
        }
        return s
    }
}
