import EarshotStore
import EarshotSync
import EarshotTransport
import EarshotWire
import Foundation
import SQLite

#if canImport(Glibc)
    import Glibc
#endif

/// The library benchmark: `earshotd` (release, CURVE on as shipped) on loopback with its Library
/// service (SQLite, WAL, synchronous = FULL, replies after commit). One client adding one item at
/// a time; Items pages of a 10 000-item library, filtered or not; 100 clients with keys of their
/// own adding at once, then every acknowledged id checked against what the daemon holds; the
/// daemon's memory and the database's size. The disk's own cost is measured beside it (a bare
/// `fdatasync` loop and `LibraryDatabase.add` in this process, in the same folder).
struct LibraryReport {
    // Conditions
    var sqliteVersion = SQLiteConnection.libraryVersion
    var stateFolder = ""
    var filesystem = ""
    var mount = ""
    var build = ""
    var loadAverage = ""
    var propertiesBytes = 0
    var bodyBytes = 0
    /// Milliseconds per 4 KiB write + fdatasync, appending (as a WAL grows) or in place.
    var syncAppend: [Double] = []
    var syncOverwrite: [Double] = []
    /// `LibraryDatabase.add` of one item in this process, same folder, no RPC.
    var inProcessAdd: [Double] = []
    /// Health/Check round trips over CURVE: what RPC costs without the library.
    var healthRoundTrip: [Double] = []

    // 1. One client, one item per Add.
    var addOne: [Double] = []
    var addOneErrors = 0

    // 2. A 10 000-item library.
    var bulkItems = 0
    var bulkBatch = 0
    var bulkSeconds = 0.0
    var bulkBatchTimes: [Double] = []
    struct Read {
        var name: String
        var pageSize: Int
        var times: [Double] = []
        var returned: Int?
        var errors = 0
    }
    var reads: [Read] = []

    // 3. Concurrent clients.
    var clients = 0
    var addsPerClient = 0
    var concurrentSeconds = 0.0
    var concurrentLatencies: [Double] = []
    var acknowledged = 0
    var errorsByCode: [String: Int] = [:]
    var busyErrors = 0
    var errorExamples: [String] = []
    var lost = 0
    var duplicated = 0
    var unacknowledgedPresent = 0
    var wrongContents = 0
    var countMismatches = 0
    var verifyErrors = 0
    var concurrentDaemonCPUPercent = 0.0
    var logBusyLines = 0
    var logBusyExamples: [String] = []

    // 4. Memory and disk.
    var rss: [(when: String, rssMB: Double, anonMB: Double)] = []
    var databaseBytes = 0
    var walBytes = 0
    var shmBytes = 0
    var totalItems = 0
    var seconds = 0.0
}

enum LibraryBenchmark {
    static let singleAdds = 500
    static let bulkItems = 10_000
    static let bulkBatch = 500
    static let clients = 100
    static let addsPerClient = 20
    static let catalogs = ["tv", "radio", "ads", "music"]
    static let genres = ["jazz", "news", "drama", "comedy", "sport", "documentary", "classical", "pop"]

    static func run(options: Options, workDirectory work: String) throws -> LibraryReport {
        var r = LibraryReport()
        let t0 = Clock.now()
        r.bulkItems = bulkItems
        r.bulkBatch = bulkBatch
        r.clients = clients
        r.addsPerClient = addsPerClient
        r.build = (Machine.executablePath() as NSString).deletingLastPathComponent.hasSuffix("/release") ? "release (-c release)" : "debug"
        r.loadAverage = (ProcStatus.read("/proc/loadavg") ?? "?").split(separator: " ").prefix(3).joined(separator: " ")

        let daemonPath = try DaemonProcess.releaseBinary()
        let state = try DaemonProcess.stateFolder(in: work, named: "library-state", catalog: nil)
        r.stateFolder = state
        r.filesystem = Shell.capture("stat", ["-f", "-c", "%T", state]) ?? "?"
        r.mount = mountOf(state)
        let sample = item(0, catalog: "tv")
        r.propertiesBytes = sample.mediaItem.customPropertiesJson.utf8.count
        r.bodyBytes = (try? sample.serializedBytes() as [UInt8])?.count ?? 0
        say("library: SQLite \(r.sqliteVersion); state folder \(state) on \(r.filesystem) (\(r.mount)); "
            + "item body \(r.bodyBytes) bytes with \(r.propertiesBytes) bytes of custom properties")

        // The disk alone: what one durable commit cannot go below.
        (r.syncAppend, r.syncOverwrite) = try fdatasyncLoop(folder: state, count: 300)
        say(String(format: "  bare 4 KiB write + fdatasync: appending p50 %.2f ms, p99 %.2f ms; in place p50 %.2f ms, p99 %.2f ms",
                   pct(r.syncAppend, 50), pct(r.syncAppend, 99), pct(r.syncOverwrite, 50), pct(r.syncOverwrite, 99)))
        r.inProcessAdd = try inProcessAdds(folder: "\(work)/library-inprocess", count: 300)
        say(String(format: "  LibraryDatabase.add of one item in this process (no RPC): p50 %.2f ms, p99 %.2f ms",
                   pct(r.inProcessAdd, 50), pct(r.inProcessAdd, 99)))

        // The daemon: CURVE on; an admin, the single client, the owner of the big library and
        // 100 phones, each with its own key.
        let admin = try CurveKeyPair.generate(), single = try CurveKeyPair.generate(), big = try CurveKeyPair.generate()
        let phones = try (0..<clients).map { _ in try CurveKeyPair.generate() }
        let phoneNames = (0..<clients).map { String(format: "phone-%03d", $0) }
        try DaemonProcess.writeAllowList(state: state, [(admin, "bench-admin", "admin"), (single, "single", "viewer"), (big, "big", "viewer")]
                                         + zip(phones, phoneNames).map { ($0, $1, "viewer") })
        let programme = "\(work)/library-silence.wav"
        try WAV.write([Float](repeating: 0, count: 16_000 * 10), sampleRate: 16_000, to: programme)
        let daemon = try DaemonProcess(path: daemonPath, state: state, programme: programme,
                                       settings: ["--session.follow=false", "--session.prepare_on_start=false"])
        defer { daemon.stop() }
        let adminClient = try RpcClient(endpoint: daemon.rpc, configuration: try DaemonProcess.curveConfiguration(state: state, keys: admin))
        defer { adminClient.close() }
        let client = try RpcClient(endpoint: daemon.rpc, configuration: try DaemonProcess.curveConfiguration(state: state, keys: single))
        defer { client.close() }
        let bigClient = try RpcClient(endpoint: daemon.rpc, configuration: try DaemonProcess.curveConfiguration(state: state, keys: big))
        defer { bigClient.close() }
        // Handshakes done before anything is timed.
        for c in [adminClient, client, bigClient] { _ = try call(c, Methods.Health.check, Earshot_V1_HealthCheckRequest()) }
        Thread.sleep(forTimeInterval: 1)
        r.rss.append(("after start (no library call yet)", daemon.residentMegabytes, ProcStatus.megabytes("RssAnon", pid: daemon.pid) ?? 0))
        for _ in 0..<200 {
            let t = Clock.now()
            _ = try call(client, Methods.Health.check, Earshot_V1_HealthCheckRequest())
            r.healthRoundTrip.append((Clock.now() - t) * 1000)
        }

        // 1. One item per Add, one client, one call at a time.
        for k in 0..<singleAdds {
            var request = Earshot_V1_AddLibraryItemsRequest()
            request.items = [newItem(k, catalog: catalogs[k % catalogs.count])]
            let t = Clock.now()
            do {
                let reply = try call(client, Methods.Library.add, request)
                r.addOne.append((Clock.now() - t) * 1000)
                if reply.items.count != 1 || reply.itemCount != UInt32(k + 1) { r.addOneErrors += 1 }
            } catch {
                r.addOneErrors += 1
            }
        }
        say(String(format: "1. %d × Add of one item: p50 %.2f, p90 %.2f, p99 %.2f, max %.2f ms; %d errors", r.addOne.count, pct(r.addOne, 50),
                   pct(r.addOne, 90), pct(r.addOne, 99), r.addOne.max() ?? -1, r.addOneErrors))
        r.rss.append(("after 1 (\(singleAdds) items)", daemon.residentMegabytes, ProcStatus.megabytes("RssAnon", pid: daemon.pid) ?? 0))

        // 2. A 10 000-item library: loaded in batches, then read a first page at a time.
        let matchedBase = LibraryBenchmark.nowMs() - Int64(bulkItems) * 60_000
        let b0 = Clock.now()
        for start in stride(from: 0, to: bulkItems, by: bulkBatch) {
            var request = Earshot_V1_AddLibraryItemsRequest()
            // One match a minute over the last week; the newest added last.
            request.items = (start..<min(bulkItems, start + bulkBatch)).map { i in
                var n = newItem(i, catalog: catalogs[i % catalogs.count], genre: genres[(i / catalogs.count) % genres.count])
                n.matchedAtUnixMs = matchedBase + Int64(i) * 60_000
                return n
            }
            let t = Clock.now()
            let reply = try call(bigClient, Methods.Library.add, request)
            r.bulkBatchTimes.append((Clock.now() - t) * 1000)
            guard reply.items.count == request.items.count else { throw BenchError("Add of \(request.items.count) items stored \(reply.items.count)") }
        }
        r.bulkSeconds = Clock.now() - b0
        say(String(format: "2. %d items in batches of %d: %.2f s = %.0f items/s (batch p50 %.1f ms, max %.1f ms)", bulkItems, bulkBatch,
                   r.bulkSeconds, Double(bulkItems) / r.bulkSeconds, pct(r.bulkBatchTimes, 50), r.bulkBatchTimes.max() ?? -1))
        func reads(_ name: String, pageSize: Int, count: Int, _ adjust: (inout Earshot_V1_LibraryItemsRequest) -> Void = { _ in },
                   expect: Int? = nil) -> LibraryReport.Read {
            var read = LibraryReport.Read(name: name, pageSize: pageSize)
            var request = Earshot_V1_LibraryItemsRequest()
            request.pageSize = UInt32(pageSize)
            adjust(&request)
            for _ in 0..<count {
                let t = Clock.now()
                do {
                    let reply = try call(bigClient, Methods.Library.items, request)
                    read.times.append((Clock.now() - t) * 1000)
                    read.returned = reply.items.count
                    if reply.itemCount != UInt32(bulkItems) || (expect.map { reply.items.count != $0 } ?? false) { read.errors += 1 }
                } catch {
                    read.errors += 1
                }
            }
            say(String(format: "   Items %@ (page_size %d) × %d: p50 %.2f ms, p99 %.2f ms; %d items returned; %d errors", name as NSString,
                       pageSize, count, pct(read.times, 50), pct(read.times, 99), read.returned ?? -1, read.errors))
            return read
        }
        r.reads.append(reads("first page", pageSize: 50, count: 300, expect: 50))
        r.reads.append(reads("first page", pageSize: 1000, count: 100, expect: 1000))
        r.reads.append(reads("first page, catalog = \"radio\" (¼ of the items)", pageSize: 50, count: 100, { $0.catalog = "radio" }, expect: 50))
        r.reads.append(reads("first page, custom property genre = \"jazz\" (⅛)", pageSize: 50, count: 100, {
            $0.propertyKey = "genre"
            $0.propertyValueJson = "\"jazz\""
        }, expect: 50))
        r.reads.append(reads("first page, catalog = \"radio\" and genre = \"jazz\" (1/32)", pageSize: 50, count: 100, {
            $0.catalog = "radio"
            $0.propertyKey = "genre"
            $0.propertyValueJson = "\"jazz\""
        }, expect: 50))
        r.reads.append(reads("first page, genre = \"polka\" (no item has it)", pageSize: 50, count: 50, {
            $0.propertyKey = "genre"
            $0.propertyValueJson = "\"polka\""
        }, expect: 0))
        r.rss.append(("after 2 (+\(bulkItems) items, \(r.reads.reduce(0) { $0 + $1.times.count }) Items calls)", daemon.residentMegabytes,
                      ProcStatus.megabytes("RssAnon", pid: daemon.pid) ?? 0))

        // 3. 100 clients, each with its own key, adding one item at a time all at once.
        try concurrent(daemon: daemon, state: state, phones: phones, names: phoneNames, admin: adminClient, &r)
        r.rss.append(("after 3 (+\(clients * addsPerClient) items)", daemon.residentMegabytes, ProcStatus.megabytes("RssAnon", pid: daemon.pid) ?? 0))

        // 4. The database on disk (the daemon still running: the WAL as it stands).
        let owners = try call(adminClient, Methods.Library.listOwners, Earshot_V1_ListLibraryOwnersRequest())
        r.totalItems = owners.owners.reduce(0) { $0 + Int($1.itemCount) }
        let db = "\(state)/library.db"
        r.databaseBytes = fileSize(db)
        r.walBytes = fileSize(db + "-wal")
        r.shmBytes = fileSize(db + "-shm")
        say("4. daemon RSS " + r.rss.map { String(format: "%@ %.1f MB (anonymous %.1f)", $0.when as NSString, $0.rssMB, $0.anonMB) }.joined(separator: "; "))
        say("   database: \(Fmt.bytes(r.databaseBytes)) + WAL \(Fmt.bytes(r.walBytes)) + shm \(Fmt.bytes(r.shmBytes)) for \(r.totalItems) items of \(owners.owners.count) owners")

        // The daemon's log: any sign that SQLite made a call wait or fail on a lock.
        let log = (try? String(contentsOfFile: daemon.log, encoding: .utf8)) ?? ""
        let busy = log.split(separator: "\n").filter { $0.lowercased().contains("busy") || $0.lowercased().contains("locked") }
        r.logBusyLines = busy.count
        r.logBusyExamples = busy.prefix(3).map(String.init)
        say("   daemon log lines with \"busy\" or \"locked\": \(busy.count)")
        r.seconds = Clock.now() - t0
        return r
    }

    // MARK: Concurrent clients

    static func concurrent(daemon: DaemonProcess, state: String, phones: [CurveKeyPair], names: [String], admin: RpcClient,
                           _ r: inout LibraryReport) throws {
        // 100 connections on one client I/O thread, as in the daemon benchmark.
        let loop = try TransportLoop()
        loop.start()
        defer { loop.stop() }
        let endpoint = daemon.rpc
        let connections = try phones.map { keys in
            try RpcClient(loop: loop, endpoint: endpoint, configuration: try DaemonProcess.curveConfiguration(state: state, keys: keys))
        }
        defer { for c in connections { c.close() } }
        let perClient = addsPerClient
        // Every handshake first.
        let (_, unreached) = ClientFanOut.timedCalls(connections, calls: 1) { c in
            _ = try await c.call(Methods.Health.check, Earshot_V1_HealthCheckRequest(), timeout: .seconds(30))
            return true
        }
        if unreached > 0 { throw BenchError("\(unreached) of \(connections.count) clients could not reach the daemon") }

        let acknowledged = Locked<[[String]]>(Array(repeating: [], count: connections.count))
        let latencies = SharedList()
        let errors = Locked<[(code: String, message: String)]>([])
        let group = DispatchGroup()
        let cpu0 = daemon.cpuSeconds()
        let t0 = Clock.now()
        for (k, c) in connections.enumerated() {
            group.enter()
            Task.detached { @Sendable in
                defer { group.leave() }
                for j in 0..<perClient {
                    var request = Earshot_V1_AddLibraryItemsRequest()
                    request.items = [newItem(j, catalog: catalogs[j % catalogs.count], client: k)]
                    let t = Clock.now()
                    do throws(RpcError) {
                        let reply = try await c.call(Methods.Library.add, request, timeout: .seconds(60))
                        latencies.append((Clock.now() - t) * 1000)
                        acknowledged.withLock { $0[k] += reply.items.map(\.id) }
                    } catch {
                        errors.withLock { $0.append((error.code.description, error.message)) }
                    }
                }
            }
        }
        group.wait()
        r.concurrentSeconds = Clock.now() - t0
        r.concurrentDaemonCPUPercent = 100 * (daemon.cpuSeconds() - cpu0) / r.concurrentSeconds
        r.concurrentLatencies = latencies.all
        let acks = acknowledged.withLock { $0 }
        r.acknowledged = acks.reduce(0) { $0 + $1.count }
        for e in errors.withLock({ $0 }) {
            r.errorsByCode[e.code, default: 0] += 1
            let m = e.message.lowercased()
            if e.code == "UNAVAILABLE" || m.contains("busy") || m.contains("locked") { r.busyErrors += 1 }
            if r.errorExamples.count < 3 { r.errorExamples.append("\(e.code): \(e.message)") }
        }
        say(String(format: "3. %d clients × %d Add of one item at once: %.2f s, %.0f adds/s, p50 %.1f ms, p99 %.1f ms, max %.1f ms; "
                   + "%d acknowledged, errors %@; daemon CPU %.0f %% of a core",
                   connections.count, perClient, r.concurrentSeconds, Double(r.acknowledged) / r.concurrentSeconds,
                   pct(r.concurrentLatencies, 50), pct(r.concurrentLatencies, 99), r.concurrentLatencies.max() ?? -1, r.acknowledged,
                   (r.errorsByCode.isEmpty ? "none" : r.errorsByCode.map { "\($0.key) \($0.value)" }.sorted().joined(separator: ", ")) as NSString,
                   r.concurrentDaemonCPUPercent))

        // Every owner's items, paged through by the admin: exactly the acknowledged ids.
        for (k, name) in names.enumerated() {
            var present: [Earshot_V1_LibraryItem] = []
            var request = Earshot_V1_LibraryItemsRequest()
            request.owner = name
            request.pageSize = 7  // several pages: the paging is checked too
            var itemCount: UInt32?
            do {
                repeat {
                    let reply = try call(admin, Methods.Library.items, request)
                    present += reply.items
                    itemCount = reply.itemCount
                    request.pageToken = reply.nextPageToken
                } while !request.pageToken.isEmpty
            } catch {
                r.verifyErrors += 1
                continue
            }
            let ids = present.map(\.id)
            let unique = Set(ids)
            let acked = Set(acks[k])
            r.duplicated += ids.count - unique.count
            r.lost += acked.subtracting(unique).count
            r.unacknowledgedPresent += unique.subtracting(acked).count
            if itemCount != UInt32(unique.count) { r.countMismatches += 1 }
            for i in present where !i.item.mediaItem.title.hasPrefix(String(format: "Client %03d, ", k)) { r.wrongContents += 1 }
        }
        say("   verified by paging each owner as the admin: lost \(r.lost), duplicated \(r.duplicated), present but not acknowledged "
            + "\(r.unacknowledgedPresent), another client's item \(r.wrongContents), item_count ≠ items \(r.countMismatches), read errors \(r.verifyErrors)")
    }

    // MARK: The disk alone

    /// 4 KiB `pwrite` + `fdatasync`, `count` times appending to a new file (as a WAL grows: the
    /// size changes too) and `count` times in place in another, taking turns so both see the same
    /// moments of the machine.
    static func fdatasyncLoop(folder: String, count: Int) throws -> (append: [Double], overwrite: [Double]) {
        let paths = ["\(folder)/fdatasync-append", "\(folder)/fdatasync-in-place"]
        let fds = paths.map { open($0, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600) }
        defer {
            for fd in fds where fd >= 0 { close(fd) }
            for p in paths { unlink(p) }
        }
        guard fds.allSatisfy({ $0 >= 0 }) else { throw BenchError("cannot open \(paths[0])") }
        let page = [UInt8](repeating: 0x5A, count: 4096)
        var times: [[Double]] = [[], []]
        for k in 0..<count {
            for which in 0..<2 {
                let offset = which == 0 ? off_t(k * page.count) : 0
                let t = Clock.now()
                guard page.withUnsafeBytes({ pwrite(fds[which], $0.baseAddress, $0.count, offset) }) == page.count, fdatasync(fds[which]) == 0 else {
                    throw BenchError("writing \(paths[which]) failed: errno \(errno)")
                }
                times[which].append((Clock.now() - t) * 1000)
            }
        }
        return (times[0], times[1])
    }

    /// The daemon's own database code, one item per add, without RPC (its own file in `folder`).
    static func inProcessAdds(folder: String, count: Int) throws -> [Double] {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let db = try LibraryDatabase(path: "\(folder)/library.db")
        var times: [Double] = []
        for k in 0..<count {
            let matched = item(k, catalog: catalogs[k % catalogs.count])
            let entry = LibraryEntry(matchedAtMs: nowMs(), catalog: matched.catalog, catalogVersion: matched.catalogVersion,
                                     customProperties: matched.mediaItem.customPropertiesJson, body: try matched.serializedBytes())
            let t = Clock.now()
            _ = try db.add([entry], owner: "in-process", nowMs: nowMs())
            times.append((Clock.now() - t) * 1000)
        }
        return times
    }

    // MARK: Items

    /// A matched TV/radio item as a match result gives it, with ≈300 bytes of custom properties.
    static func item(_ k: Int, catalog: String, genre: String? = nil, client: Int? = nil) -> Earshot_V1_MatchedMediaItem {
        let genre = genre ?? genres[k % genres.count]
        var media = Earshot_V1_MediaItem()
        media.id = "\(catalog)-ep-" + String(format: "%05d", k)
        media.title = (client.map { String(format: "Client %03d, ", $0) } ?? "") + "The Evening Programme, episode \(k % 500 + 1)"
        media.subtitle = "Season \(k / 500 + 1)"
        media.artist = "Channel Four Presenters"
        media.genres = [genre]
        media.artworkURL = "https://media.example.org/art/\(catalog)/\(k).jpg"
        media.webURL = "https://www.example.org/programmes/\(catalog)/\(k)"
        media.creationDate = "2026-11-\(String(format: "%02d", k % 28 + 1))T19:00:00Z"
        media.customPropertiesJson = """
            {"genre":"\(genre)","channel":"Channel 4 HD","programme_id":"PRG-\(String(format: "%06d", k))","season":\(k / 500 + 1),\
            "episode":\(k % 500 + 1),"broadcast":"2026-11-\(String(format: "%02d", k % 28 + 1))T19:00:00Z","rating":"PG","language":"en-GB",\
            "subtitles":true,"audio_description":false,"tags":["live","studio","weekday"],"producer":"North Studios Ltd",\
            "sponsor":"Example Insurance plc","region":"UK"}
            """
        var m = Earshot_V1_MatchedMediaItem()
        m.mediaItem = media
        m.matchOffset = Double(k % 1800) + 0.347
        m.predictedCurrentMatchOffset = m.matchOffset + 0.412
        m.frequencySkew = 0.0012
        m.timeSkew = 0.0009
        m.confidence = 0.87
        m.referenceIndex = UInt32(k % 700)
        m.catalog = catalog
        m.catalogVersion = 3
        return m
    }

    static func newItem(_ k: Int, catalog: String, genre: String? = nil, client: Int? = nil) -> Earshot_V1_NewLibraryItem {
        var n = Earshot_V1_NewLibraryItem()
        n.item = item(k, catalog: catalog, genre: genre, client: client)
        return n
    }

    // MARK: Helpers

    static func call<Req, Res>(_ client: RpcClient, _ method: RpcMethod<Req, Res>, _ request: Req) throws(RpcError) -> Res {
        try DaemonBenchmark.blocking { () throws(RpcError) in try await client.call(method, request, timeout: .seconds(30)) }
    }

    static func pct(_ v: [Double], _ p: Double) -> Double { Stats.percentile(v, p) ?? -1 }

    static func nowMs() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded()) }

    static func fileSize(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0
    }

    /// "/dev/vda on / (ext4, rw,relatime)": the mount holding `path`, from /proc/self/mounts.
    static func mountOf(_ path: String) -> String {
        let resolved = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        var best: [Substring]?
        for line in (ProcStatus.read("/proc/self/mounts") ?? "").split(separator: "\n") {
            let f = line.split(separator: " ")
            guard f.count >= 4 else { continue }
            let point = String(f[1])
            let inside = point == "/" || resolved == point || resolved.hasPrefix(point + "/")
            if inside, point.count >= (best.map { $0[1].count } ?? -1) { best = f }
        }
        guard let f = best else { return "?" }
        return "\(f[0]) on \(f[1]) (\(f[2]), \(f[3]))"
    }
}

extension Report {
    static func librarySection(_ env: RunEnvironment, _ r: LibraryReport) -> String {
        func ms(_ v: [Double], _ p: Double, _ digits: Int = 2) -> String { Fmt.f(Stats.percentile(v, p), digits) }
        func verdict(_ ok: Bool) -> String { ok ? "PASS" : "**short of target**" }
        var s = "## Library: matched items in SQLite, over CURVE\n\n" + runLine(env) + "\n\n"
        s += "`earshotd` (release) as a child process on loopback, **CURVE on** (as shipped; every client its own key and "
            + "allow-list name, which owns its library), no catalog, `session.follow = false`; clients are `RpcClient`s in the "
            + "benchmark process on the same \(env.cores) cores. The library is one SQLite file in the state folder, WAL mode, "
            + "`synchronous = FULL`: each Add replies after its transaction is on disk; one write queue in the daemon (Adds "
            + "that arrive while one commits are committed together, one sync for all, each in its own savepoint), a second "
            + "connection for reads. Items are realistic match results (a TV programme with title, artist, genre, URLs and "
            + "\(r.propertiesBytes) bytes of custom properties JSON; \(r.bodyBytes) bytes stored per item).\n\n"
        s += "| condition | |\n|---|---|\n"
        s += "| machine | \(env.architecture), \(env.cores) cores, \(env.cpu), \(env.memory); load average \(r.loadAverage) at start |\n"
        s += "| build | \(env.swift), \(r.build) |\n"
        s += "| SQLite | \(r.sqliteVersion) (the system library, linked by earshotd and by the benchmark) |\n"
        s += "| state folder | `stat -f -c %T`: \(r.filesystem); mount: \(r.mount) |\n"
        s += "| security | CURVE on; \(r.clients + 3) keys in the allow-list |\n"
        s += "| the disk alone: 4 KiB `pwrite` + `fdatasync`, \(r.syncAppend.count)× appending / \(r.syncOverwrite.count)× in place, in the state folder | "
            + "p50 \(ms(r.syncAppend, 50)) / \(ms(r.syncOverwrite, 50)) ms, p99 \(ms(r.syncAppend, 99)) / \(ms(r.syncOverwrite, 99)) ms |\n"
        s += "| the database code alone: `LibraryDatabase.add` of one item in the benchmark process (same settings, same file system, no RPC), \(r.inProcessAdd.count)× | "
            + "p50 \(ms(r.inProcessAdd, 50)) ms, p90 \(ms(r.inProcessAdd, 90)) ms, p99 \(ms(r.inProcessAdd, 99)) ms |\n"
        s += "| RPC alone: `Health/Check` round trip over CURVE, \(r.healthRoundTrip.count)× | p50 \(ms(r.healthRoundTrip, 50)) ms, p99 \(ms(r.healthRoundTrip, 99)) ms |\n\n"

        s += "| measure | result | target | |\n|---|---|---|---|\n"
        let add99 = Stats.percentile(r.addOne, 99) ?? .infinity
        s += "| 1. `Add` of one item, \(r.addOne.count) calls one after another from one client | p50 \(ms(r.addOne, 50)), p90 \(ms(r.addOne, 90)), "
            + "p99 \(ms(r.addOne, 99)), max \(Fmt.f(r.addOne.max(), 2)) ms; \(r.addOneErrors) errors | p99 ≤ 15 ms with full sync | \(verdict(add99 <= 15 && r.addOneErrors == 0)) |\n"
        s += String(format: "| 2. loading one owner's %d items, `Add` of %d at a time | %.0f items/s (%.2f s; per call p50 %@ ms, max %@ ms) | | |\n",
                    r.bulkItems, r.bulkBatch, Double(r.bulkItems) / max(r.bulkSeconds, 1e-9), r.bulkSeconds,
                    ms(r.bulkBatchTimes, 50, 1), Fmt.f(r.bulkBatchTimes.max(), 1))
        for (k, read) in r.reads.enumerated() {
            let p99 = Stats.percentile(read.times, 99) ?? .infinity
            let firstPage = read.pageSize == 50
            let target = firstPage ? (k == 0 ? "p99 ≤ 10 ms" : "(p99 ≤ 10 ms)") : ""
            let ok = firstPage ? verdict(p99 <= 10 && read.errors == 0) : (read.errors == 0 ? "" : "**\(read.errors) errors**")
            s += "| \(k == 0 ? "2. " : "… ")`Items` \(read.name), page_size \(read.pageSize), of the \(r.bulkItems)-item library, \(read.times.count)× "
                + "| p50 \(ms(read.times, 50)) ms, p99 \(ms(read.times, 99)) ms; \(read.returned.map(String.init) ?? "—") items a page"
                + "\(read.errors > 0 ? "; \(read.errors) errors" : "") | \(target) | \(ok) |\n"
        }
        let total = r.clients * r.addsPerClient
        let errorCount = r.errorsByCode.values.reduce(0, +)
        let codes = r.errorsByCode.isEmpty ? "none" : r.errorsByCode.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        s += String(format: "| 3. %d clients (own keys, %d connections on one client I/O thread) each adding %d items, one call at a time, all at once | "
                    + "%d calls in %.2f s = **%.0f adds/s**; latency p50 %@ ms, p99 %@ ms, max %@ ms; daemon CPU %.0f %% of a core | | |\n",
                    r.clients, r.clients, r.addsPerClient, total, r.concurrentSeconds, Double(r.acknowledged) / max(r.concurrentSeconds, 1e-9),
                    ms(r.concurrentLatencies, 50, 1), ms(r.concurrentLatencies, 99, 1), Fmt.f(r.concurrentLatencies.max(), 1),
                    r.concurrentDaemonCPUPercent)
        let intact = r.lost == 0 && r.duplicated == 0 && r.unacknowledgedPresent == 0 && r.wrongContents == 0 && r.countMismatches == 0
            && r.verifyErrors == 0 && r.acknowledged == total
        s += "| … every owner paged through by the admin (`owner`, page_size 7) against the acknowledged ids | \(r.acknowledged) of \(total) acknowledged; "
            + "lost \(r.lost), duplicated \(r.duplicated), present but not acknowledged \(r.unacknowledgedPresent), in another owner's library "
            + "\(r.wrongContents), item_count ≠ items \(r.countMismatches)\(r.verifyErrors > 0 ? ", \(r.verifyErrors) read errors" : "") "
            + "| lost = 0, duplicated = 0 | \(verdict(intact)) |\n"
        s += "| … replies that were errors, by status code | \(errorCount) (\(codes))"
            + "\(r.errorExamples.isEmpty ? "" : "; e.g. " + r.errorExamples.map { "`\($0)`" }.joined(separator: "; ")) "
            + "| 0; no UNAVAILABLE / busy (SQLITE_BUSY reaching a client) | \(verdict(errorCount == 0 && r.busyErrors == 0)) |\n"
        s += "| … daemon log lines with \"busy\" or \"locked\" (whole run) | \(r.logBusyLines)"
            + "\(r.logBusyExamples.isEmpty ? "" : ": " + r.logBusyExamples.map { "`\($0.prefix(160))`" }.joined(separator: "; ")) | 0 | \(verdict(r.logBusyLines == 0)) |\n"
        s += "| 4. daemon RSS | " + r.rss.map { String(format: "%@: %.1f MB (anonymous %.1f)", $0.when as NSString, $0.rssMB, $0.anonMB) }.joined(separator: "; ")
            + " | | |\n"
        let onDisk = r.databaseBytes + r.walBytes + r.shmBytes
        s += "| … database on disk at the end, daemon running | \(Fmt.bytes(onDisk)): library.db \(Fmt.bytes(r.databaseBytes)), -wal \(Fmt.bytes(r.walBytes)), "
            + "-shm \(Fmt.bytes(r.shmBytes)); \(r.totalItems) items = \(r.totalItems > 0 ? Fmt.bytes(onDisk / r.totalItems) : "—") per item | | |\n"
        s += String(format: "| (whole benchmark) | %.0f s | ≤ 2 min | |\n", r.seconds)
        return s
    }
}
