import CZMQ
import EarshotTestSupport
import EarshotTransport
import EarshotWire
import Foundation
import EarshotSystem

#if canImport(Glibc)
    import Glibc
#endif

/// The hostile-LAN benchmark: `earshotd` as shipped (CURVE on) under each attack a LAN
/// peer can mount to take it down or lock clients out, while an allow-listed operator calls `Match` back to
/// back. What the good client sees (latency, errors) is the measure; the daemon's descriptors and
/// memory show what the attack cost it.
struct HostileReport {
    struct Row {
        var attack: String
        var latencies: [Double] = []
        var errors = 0
        /// The daemon's CPU while the row ran, in % of one core.
        var daemonCPU = 0.0
        var detail = ""
    }

    var fileLimit = 0
    var connectionCap = 0
    /// What the catalog was made of (the corpus, or --synthetic music).
    var catalog = ""
    var rows: [Row] = []
}

enum HostileBenchmark {
    /// Descriptors the daemon gets: systemd's default soft limit, which a connection flood must not exhaust.
    static let fileLimit = 1024

    static func run(options: Options, prepared p: Prepared, workDirectory: String) throws -> HostileReport {
        var report = HostileReport(fileLimit: fileLimit)
        report.catalog = String(format: "%.1f MB catalog of %@", Double(p.catalogBytes) / 1_048_576, p.corpus.description)
        let daemonPath = try DaemonProcess.releaseBinary()
        let state = try DaemonProcess.stateFolder(in: workDirectory, named: "hostile-state", catalog: p.catalogPath)
        let file = p.catalogFiles.max { p.corpus.files[$0].duration < p.corpus.files[$1].duration }!
        let programme = try LiveBenchmark.programmeWAV(p, file, start: 10, seconds: min(150, p.corpus.files[file].duration - 10), speed: 1,
                                                       workDirectory)

        let good = try CurveKeyPair.generate(), admin = try CurveKeyPair.generate(), viewer = try CurveKeyPair.generate()
        try AtomicFile.write(Array("\(good.publicKey) good operator\n\(admin.publicKey) admin admin\n\(viewer.publicKey) attacker viewer\n".utf8),
                             to: "\(state)/clients.allow")
        let daemon = try DaemonProcess(path: daemonPath, state: state, programme: programme, settings: ["--session.follow=false"],
                                       fileLimit: fileLimit)
        defer { daemon.stop() }
        let serverKey = try DaemonProcess.serverPublicKey(state: state)
        let security = { (keys: CurveKeyPair) in ClientSecurity(serverPublicKey: serverKey, keyPair: keys) }
        var configuration = RpcClient.Configuration()
        configuration.security = security(admin)
        let stats = try RpcClient(endpoint: daemon.rpc, configuration: configuration)
        defer { stats.close() }
        func counter(_ name: String) -> UInt64 {
            let reply = try? DaemonBenchmark.blocking { () throws(RpcError) in
                try await stats.call(Methods.Health.getStats, Earshot_V1_GetStatsRequest())
            }
            return reply?.counters[name] ?? 0
        }
        configuration.security = security(good)
        let client = try RpcClient(endpoint: daemon.rpc, configuration: configuration)
        defer { client.close() }
        Thread.sleep(forTimeInterval: 5)  // ≥ 3 s heard: Match answers from the prepared window
        report.connectionCap = Int(counter("connections_limit"))
        let seconds: Double = options.quick ? 5 : 15
        func wants(_ attack: String) -> Bool { options.attacks.map { $0.contains(attack) } ?? true }

        // 0. Nobody attacks.
        report.rows.append(measure("none", daemon: daemon, client: client, seconds: seconds) { {} })
        say("idle: \(summary(report.rows.last!))")

        if wants("connections") {
            // 1. Connections that never handshake, reopened as the daemon closes them.
            var mostDescriptors = 0, opened = 0
            var row = try measure("2000 TCP connections that never handshake, reopened as they close", daemon: daemon, client: client, seconds: seconds) {
                let flood = try ConnectionFlood(endpoint: daemon.rpc, connections: 2000)
                return {
                    opened = flood.opened
                    flood.stop()
                }
            } during: {
                mostDescriptors = max(mostDescriptors, daemon.openDescriptors)
            }
            // A newcomer right after the flood: how long until its first call is answered.
            let t0 = Clock.now()
            let newcomer = try RpcClient(endpoint: daemon.rpc, configuration: configuration)
            let newcomerOK = (try? DaemonBenchmark.blocking { () throws(RpcError) in
                try await newcomer.call(Methods.Health.check, Earshot_V1_HealthCheckRequest(), timeout: .seconds(30))
            }) != nil
            let newcomerSeconds = Clock.now() - t0
            newcomer.close()
            row.detail = "\(opened) connections opened; daemon peak \(mostDescriptors) descriptors of \(fileLimit) "
                + "(cap \(report.connectionCap) connections); refused \(counter("connections_refused")), door closed \(counter("connections_door_closings"))×; "
                + (newcomerOK ? String(format: "a new client's first call answered %.2f s after the flood", newcomerSeconds) : "a new client was NOT answered")
                + (daemon.process.isRunning ? "" : "; THE DAEMON DIED")
            report.rows.append(row)
            say("connection flood: \(summary(row)); \(row.detail)")
        }

        if wants("streams") {
            // 2. One viewer key opens 17 connections × 16 Health/Watch streams with 2³²-ms deadlines.
            var freedSeconds = -1.0, held: UInt64 = 0
            var row = try measure("one viewer key: 17 connections × 16 Health/Watch streams, deadline ≈ 2³² ms", daemon: daemon, client: client, seconds: seconds) {
                let watch: [UInt8] = try Earshot_V1_HealthCheckRequest().serializedBytes()
                let dealers = try (0..<17).map { c in
                    let dealer = try RawDealer(endpoint: daemon.rpc, serverKey: serverKey, keys: viewer)
                    for i in 0..<16 {
                        dealer.send(try RawDealer.envelope(UInt64(c * 16 + i + 1), Methods.Health.watch.path, payload: watch, timeoutMs: UInt32.max - 1))
                    }
                    return dealer
                }
                return {
                    // The viewer leaves without a CANCEL: how long until its calls are gone.
                    held = counter("rpc_in_flight")
                    for dealer in dealers { dealer.close() }
                    let t = Clock.now()
                    while Clock.now() - t < 30, counter("rpc_in_flight") > 1 { Thread.sleep(forTimeInterval: 0.05) }
                    freedSeconds = Clock.now() - t
                }
            }
            row.detail = String(format: "%d calls in flight at the end (the viewer's share + this count's own call); freed %.2f s after the viewer closed its sockets without CANCEL",
                                Int(held), freedSeconds)
            report.rows.append(row)
            say("stream hoarding: \(summary(row)); \(row.detail)")
        }

        if wants("metadata") {
            // 3. Four connections send 3.9 MB envelopes of 280 000 metadata entries.
            // A home LAN carries at most 1 Gbit/s (≈ 120 MB/s, 31 bombs a second); loopback carries
            // ten times that, so the attack runs at the LAN's rate, then as fast as loopback allows.
            for (window, pause) in [(1, 4 * 3.9 / 120), (1, 0), (4, 0)] {
                var bombs = 0
                var row = try measure("4 connections sending 3.9 MB envelopes of 280 000 metadata entries, "
                                  + (pause > 0 ? "paced to 1 Gbit/s in all (a LAN's most)"
                                     : window == 1 ? "each as soon as the last is answered (loopback speed)" : "up to \(window) unanswered each (loopback speed)"),
                                  daemon: daemon, client: client, seconds: seconds) {
                    var bomb = Earshot_V1_RequestEnvelope()
                    bomb.method = Methods.Health.check.path
                    bomb.metadata = Dictionary(uniqueKeysWithValues: (0..<280_000).map { (String(format: "k%06d", $0), "v") })
                    // The id goes first as a 10-byte varint (tag 1), so each send rewrites it in place.
                    let bytes: [UInt8] = [0x08] + [UInt8](repeating: 0x80, count: 9) + [0] + (try bomb.serializedBytes())
                    let stop = SharedValue(false)
                    let sent = SharedCounter()
                    let threads = try (0..<4).map { _ in
                        let dealer = try RawDealer(endpoint: daemon.rpc, serverKey: serverKey, keys: viewer)
                        return BackgroundThread {
                            var id: UInt64 = 0, outstanding = 0
                            var envelope = bytes
                            while !stop.get() {
                                // Up to `window` unanswered: 1 is a client calling back to back.
                                if outstanding < window {
                                    id += 1
                                    RawDealer.setRequestID(id, in: &envelope)
                                    if dealer.send(envelope) { outstanding += 1; sent.add() }
                                    if pause > 0 { Thread.sleep(forTimeInterval: pause) }
                                }
                                while dealer.receive(timeoutMs: outstanding < window ? 0 : 50) { outstanding -= 1 }
                            }
                            dealer.close()
                        }
                    }
                    return {
                        stop.set(true)
                        for thread in threads { thread.join() }
                        bombs = sent.count
                    }
                }
                row.detail = "\(bombs) envelopes sent (\(Fmt.f(Double(bombs) * 3.9, 0)) MB)"
                report.rows.append(row)
                say("metadata bombs (window \(window), pause \(pause) s): \(summary(row)); \(row.detail)")
            }
        }

        if wants("subscriptions") {
            // 4. Ten connections subscribe to 20 000 distinct 200-byte prefixes each.
            let before = daemon.residentMegabytes
            var most = before, after = 0.0
            var row = try measure("10 subscribers × 20 000 distinct 200-byte subscriptions", daemon: daemon, client: client, seconds: seconds) {
                let subscribers = try (0..<10).map { _ in try RawSubscriber(endpoint: daemon.events, serverKey: serverKey, keys: viewer) }
                for i in 0..<20_000 {
                    for (f, subscriber) in subscribers.enumerated() {
                        subscriber.subscribe(Array(String(format: "%02d-%06d-", f, i).utf8) + [UInt8](repeating: 0x7A, count: 190))
                    }
                    if i % 500 == 499 {
                        Thread.sleep(forTimeInterval: 0.02)
                        most = max(most, daemon.residentMegabytes)
                    }
                }
                return {
                    most = max(most, daemon.residentMegabytes)
                    for subscriber in subscribers { subscriber.close() }
                    Thread.sleep(forTimeInterval: 3)
                    after = daemon.residentMegabytes
                }
            }
            row.detail = String(format: "daemon RSS %.1f MB before, %.1f MB at most during, %.1f MB 3 s after; %d subscribers cut off",
                                before, most, after, Int(counter("events_subscribers_cut_off")))
            report.rows.append(row)
            say("subscription flood: \(summary(row)); \(row.detail)")
        }
        if wants("library") {
            try libraryRows(into: &report, daemon: daemon, serverKey: serverKey, good: client, viewer: viewer, seconds: seconds)
        }
        if !daemon.process.isRunning { throw BenchError("earshotd died under attack; see \(daemon.log)") }
        if wants("cues") {
            daemon.stop()
            try cueRows(into: &report, daemonPath: daemonPath, p: p, programme: programme, seconds: seconds, workDirectory: workDirectory)
        }
        return report
    }

    /// One viewer key with a 20 000-item library opens 80 WatchLibrary streams from version 0
    /// (16 on each of 5 connections; its limits let 64 in) while the good operator reads its own
    /// library one item at a time: the operator's Items idle and under the attack, and how long
    /// the viewer waits for its streams' first replies.
    static func libraryRows(into report: inout HostileReport, daemon: DaemonProcess, serverKey: String, good: RpcClient,
                            viewer: CurveKeyPair, seconds: Double) throws {
        var configuration = RpcClient.Configuration()
        configuration.security = ClientSecurity(serverPublicKey: serverKey, keyPair: viewer)
        let attacker = try RpcClient(endpoint: daemon.rpc, configuration: configuration)
        defer { attacker.close() }
        let changes = 20, perChange = 1000
        for c in 0..<changes {
            var add = Earshot_V1_AddLibraryItemsRequest()
            add.items = (0..<perChange).map { LibraryBenchmark.newItem(c * perChange + $0, catalog: "hostile") }
            _ = try LibraryBenchmark.call(attacker, Methods.Library.add, add)
        }
        var own = Earshot_V1_AddLibraryItemsRequest()
        own.items = [LibraryBenchmark.newItem(0, catalog: "own")]
        _ = try LibraryBenchmark.call(good, Methods.Library.add, own)

        var row = measure("none (the good operator's `Library/Items`, page_size 1)", daemon: daemon, client: good, seconds: seconds,
                          probe: .libraryItems) { {} }
        report.rows.append(row)
        say("library idle: \(summary(row))")

        let streams = 64
        let firstReply = SharedValue<[UInt64: Double]>([:]), caughtUp = SharedValue<[UInt64: Double]>([:])
        let refused = SharedCounter()
        row = try measure("one viewer key: 80 library watches from version 0 on a 20,000-item backlog (16 on each of 5 connections; "
                          + "the good operator's `Library/Items`, page_size 1)", daemon: daemon, client: good, seconds: max(seconds, 60),
                          probe: .libraryItems, until: { caughtUp.get().count >= streams }) {
            var watch = Earshot_V1_WatchLibraryRequest()
            watch.fromVersion = 0
            let payload: [UInt8] = try watch.serializedBytes()
            let stop = SharedValue(false)
            let t0 = Clock.now()
            let threads = try (0..<5).map { c in
                let dealer = try RawDealer(endpoint: daemon.rpc, serverKey: serverKey, keys: viewer)
                for i in 0..<16 {
                    dealer.send(try RawDealer.envelope(UInt64(c * 16 + i + 1), Methods.Library.watchLibrary.path, payload: payload, timeoutMs: 600_000))
                }
                return BackgroundThread {
                    var messages: [UInt64: Int] = [:]
                    while !stop.get() {
                        guard let reply = dealer.receiveEnvelope(timeoutMs: 50) else { continue }
                        let id = reply.requestID, t = Clock.now() - t0
                        firstReply.update { if $0[id] == nil { $0[id] = t } }
                        if reply.kind == .end, reply.status.code == RpcStatusCode.resourceExhausted.rawValue { refused.add() }
                        guard reply.kind == .message else { continue }
                        messages[id, default: 0] += 1
                        // The backlog's changes, then CURRENT.
                        if messages[id] == changes + 1 { caughtUp.update { $0[id] = t } }
                    }
                    dealer.close()
                }
            }
            return {
                stop.set(true)
                for thread in threads { thread.join() }
            }
        }
        let admitted = firstReply.get().count - refused.count
        let firsts = Array(firstReply.get().values), done = Array(caughtUp.get().values)
        let caughtUpText = done.isEmpty
            ? "none caught up (\(changes) changes and CURRENT) within the row: its streams share one key's pace"
            : String(format: "%d streams caught up (%d changes and CURRENT), the last after %.1f s", done.count, changes, done.max() ?? -1)
        row.detail = String(format: "%d streams let in, %d refused; the viewer's first replies after %.2f s (p50), %.2f s (last); ",
                            admitted, refused.count, Stats.percentile(firsts, 50) ?? -1, firsts.max() ?? -1) + caughtUpText
        report.rows.append(row)
        say("library watches: \(summary(row)); \(row.detail)")
    }

    /// What the good client calls back to back while a row runs.
    /// An operator key sets the most cues allowed (count and text) on the programme being
    /// played, 100 a second from 3 s ahead, then clears them, while a good client calls `Match`.
    /// A daemon of its own, following the programme (the one above does not follow).
    static func cueRows(into report: inout HostileReport, daemonPath: String, p: Prepared, programme: String, seconds: Double,
                        workDirectory: String) throws {
        let state = try DaemonProcess.stateFolder(in: workDirectory, named: "hostile-cues-state", catalog: p.catalogPath)
        let good = try CurveKeyPair.generate(), controller = try CurveKeyPair.generate()
        try DaemonProcess.writeAllowList(state: state, [(good, "good", "operator"), (controller, "controller", "operator")])
        let daemon = try DaemonProcess(path: daemonPath, state: state, programme: programme, settings: [], fileLimit: fileLimit)
        defer { daemon.stop() }
        let serverKey = try DaemonProcess.serverPublicKey(state: state)
        var configuration = RpcClient.Configuration()
        configuration.security = ClientSecurity(serverPublicKey: serverKey, keyPair: good)
        let client = try RpcClient(endpoint: daemon.rpc, configuration: configuration)
        defer { client.close() }
        configuration.security = ClientSecurity(serverPublicKey: serverKey, keyPair: controller)
        let attacker = try RpcClient(endpoint: daemon.rpc, configuration: configuration)
        defer { attacker.close() }
        Thread.sleep(forTimeInterval: 5)
        var idle = measure("none (a daemon following the programme for cues)", daemon: daemon, client: client, seconds: seconds) { {} }
        idle.detail = String(format: "daemon RSS %.1f MB", daemon.residentMegabytes)
        report.rows.append(idle)
        say("cues, idle: \(summary(idle))")

        // Where the programme is: the cues go from 3 s ahead of it.
        let heard = try DaemonBenchmark.blocking { () throws(RpcError) in
            try await attacker.call(Methods.Recognizer.match, Earshot_V1_MatchRequest(), timeout: .seconds(10))
        }
        guard heard.outcome == .match, let top = heard.items.first else { throw BenchError("the programme is not recognised") }
        var set = Earshot_V1_SetCuesRequest()
        set.reference.mediaItemID = top.mediaItem.id
        let first = top.predictedCurrentMatchOffset + 3
        var text = Earshot_V1_CueAttribute()
        text.kind = .quotedString
        text.value = String(repeating: "x", count: 110)  // 2,000 × (7-byte id + name + 110) ≈ 256 KiB: the text limit too
        set.cues = (0..<2_000).map { i in
            var c = Earshot_V1_Cue()
            c.id = String(format: "c%06d", i)
            c.start = first + Double(i) * 0.01
            c.duration = 0.005
            c.attributes = ["X-COM-T": text]
            return c
        }
        let request = set
        let before = daemon.residentMegabytes
        var peak = before, setSeconds = -1.0, events = 0, standsFor = 0, largestSnapshot = 0
        let countedEvents = SharedCounter(), countedCues = SharedCounter()
        let watcher = Task {
            let stream = attacker.stream(Methods.Cues.streamCues, Earshot_V1_StreamCuesRequest(), timeout: .seconds(600))
            do {
                for try await e in stream where [.started, .skipped, .ended, .upcoming].contains(e.kind) {
                    countedEvents.add()
                    if e.kind == .started || e.kind == .skipped { countedCues.add(max(1, Int(e.coalesced))) }
                }
            } catch {}
        }
        var row = try measure("an operator's SetCues of the most cues allowed (2,000, 256 KiB of text) on the programme playing, 100 a second",
                              daemon: daemon, client: client, seconds: max(seconds, 25)) {
            let t = Clock.now()
            _ = try DaemonBenchmark.blocking { () throws(RpcError) in
                try await attacker.call(Methods.Cues.setCues, request, timeout: .seconds(60))
            }
            setSeconds = Clock.now() - t
            return {}
        } during: {
            peak = max(peak, daemon.residentMegabytes)
            if let snapshot = try? DaemonBenchmark.blocking({ () throws(RpcError) in
                try await attacker.call(Methods.Session.getSnapshot, Earshot_V1_GetSnapshotRequest(), timeout: .seconds(10))
            }), let bytes: [UInt8] = try? snapshot.serializedBytes() {
                largestSnapshot = max(largestSnapshot, bytes.count)
            }
        }
        watcher.cancel()
        (events, standsFor) = (countedEvents.count, countedCues.count)
        let t = Clock.now()
        _ = try DaemonBenchmark.blocking { () throws(RpcError) in
            try await attacker.call(Methods.Cues.clearCues, request.reference, timeout: .seconds(60))
        }
        let clearSeconds = Clock.now() - t
        let t2 = Clock.now()
        _ = try DaemonBenchmark.blocking { () throws(RpcError) in
            try await client.call(Methods.Session.getSnapshot, Earshot_V1_GetSnapshotRequest(), timeout: .seconds(30))
        }
        let answeredSeconds = Clock.now() - t2
        Thread.sleep(forTimeInterval: 3)
        let after = daemon.residentMegabytes
        let logLines = ((try? String(contentsOfFile: daemon.log, encoding: .utf8)) ?? "").split(separator: "\n")
            .filter { $0.contains("cue started:") || $0.contains("cue skipped:") }.count
        row.detail = String(format: "SetCues answered in %.2f s, ClearCues in %.2f s, GetSnapshot %.3f s after; %d cue events on StreamCues "
                            + "for %d cues started or skipped, %d info log lines; largest GetSnapshot %d bytes; daemon RSS %.1f MB before, "
                            + "%.1f MB at most, %.1f MB 3 s after ClearCues",
                            setSeconds, clearSeconds, answeredSeconds, events, standsFor, logLines, largestSnapshot, before, peak, after)
        report.rows.append(row)
        say("cues: \(summary(row)); \(row.detail)")
        if !daemon.process.isRunning { throw BenchError("earshotd died under the cue attack; see \(daemon.log)") }
    }

    enum Probe {
        case match
        /// `Library/Items` of its own library, one item a page.
        case libraryItems
    }

    /// The good client's `Match` calls for `seconds` while the attack `start` sets up runs; the
    /// attack's returned closure ends it. `during` runs between calls.
    static func measure(_ attack: String, daemon: DaemonProcess, client: RpcClient, seconds: Double, probe: Probe = .match,
                        until over: () -> Bool = { false }, start: () throws -> (() -> Void),
                        during: () -> Void = {}) rethrows -> HostileReport.Row {
        var row = HostileReport.Row(attack: attack)
        let cpu0 = daemon.cpuSeconds()
        let end = try start()
        let t0 = Clock.now()
        var page = Earshot_V1_LibraryItemsRequest()
        page.pageSize = 1
        let items = page
        while Clock.now() - t0 < seconds, !over() {
            let t = Clock.now()
            do {
                switch probe {
                case .match:
                    _ = try DaemonBenchmark.blocking { () throws(RpcError) in
                        try await client.call(Methods.Recognizer.match, Earshot_V1_MatchRequest(), timeout: .seconds(10))
                    }
                case .libraryItems:
                    _ = try DaemonBenchmark.blocking { () throws(RpcError) in
                        try await client.call(Methods.Library.items, items, timeout: .seconds(10))
                    }
                }
                row.latencies.append((Clock.now() - t) * 1000)
            } catch {
                row.errors += 1
            }
            during()
            Thread.sleep(forTimeInterval: 0.01)
        }
        row.daemonCPU = 100 * (daemon.cpuSeconds() - cpu0) / (Clock.now() - t0)
        end()
        return row
    }

    static func summary(_ row: HostileReport.Row) -> String {
        String(format: "%d calls, %d errors, p50 %.2f ms, p99 %.2f ms, max %.2f ms; daemon CPU %.1f %%", row.latencies.count, row.errors,
               Stats.percentile(row.latencies, 50) ?? -1, Stats.percentile(row.latencies, 99) ?? -1, row.latencies.max() ?? -1, row.daemonCPU)
    }
}

/// A DEALER that speaks the RPC frames without the client library: attackers send what no
/// library would.
final class RawDealer: @unchecked Sendable {
    private let socket: UnsafeMutableRawPointer

    init(endpoint: String, serverKey: String, keys: CurveKeyPair) throws {
        socket = try RawZMQ.socket(ZMQ_DEALER, endpoint: endpoint, serverKey: serverKey, keys: keys)
    }

    @discardableResult
    func send(_ envelope: [UInt8]) -> Bool {
        let signature = Array(rpcSignature.utf8)
        guard signature.withUnsafeBytes({ zmq_send(socket, $0.baseAddress, $0.count, ZMQ_SNDMORE | ZMQ_DONTWAIT) }) >= 0 else { return false }
        return envelope.withUnsafeBytes { zmq_send(socket, $0.baseAddress, $0.count, ZMQ_DONTWAIT) } >= 0
    }

    /// Reads one whole reply if one comes within `timeoutMs`.
    /// Whether a whole reply came within `timeoutMs` (read and dropped).
    func receive(timeoutMs: Int) -> Bool { receiveLastFrame(timeoutMs: timeoutMs) != nil }

    /// Reads one whole reply if one comes within `timeoutMs`, and decodes its envelope (the last frame).
    func receiveEnvelope(timeoutMs: Int) -> Earshot_V1_ResponseEnvelope? {
        receiveLastFrame(timeoutMs: timeoutMs).flatMap { try? Earshot_V1_ResponseEnvelope(serializedBytes: $0) }
    }

    /// The last frame of one whole reply, if one comes within `timeoutMs`.
    private func receiveLastFrame(timeoutMs: Int) -> [UInt8]? {
        var item = zmq_pollitem_t(socket: socket, fd: -1, events: Int16(ZMQ_POLLIN), revents: 0)
        guard zmq_poll(&item, 1, timeoutMs) > 0 else { return nil }
        var more: Int32 = 1
        var size = MemoryLayout<Int32>.size
        var last: [UInt8] = []
        repeat {
            var message = zmq_msg_t()
            zmq_msg_init(&message)
            let count = zmq_msg_recv(&message, socket, 0)
            if count >= 0 { last = [UInt8](UnsafeRawBufferPointer(start: zmq_msg_data(&message), count: Int(count))) }
            zmq_msg_close(&message)
            zmq_getsockopt(socket, ZMQ_RCVMORE, &more, &size)
        } while more != 0
        return last
    }

    func close() { zmq_close(socket) }

    static func envelope(_ id: UInt64, _ method: String, payload: [UInt8], timeoutMs: UInt32) throws -> [UInt8] {
        var envelope = Earshot_V1_RequestEnvelope()
        envelope.requestID = id
        envelope.method = method
        envelope.payload = Data(payload)
        envelope.timeoutMs = timeoutMs
        return try envelope.serializedBytes()
    }

    /// Rewrites the request id of a serialized envelope whose id field (1) comes first as a
    /// 10-byte varint: cheaper than encoding 3.9 MB again.
    static func setRequestID(_ id: UInt64, in envelope: inout [UInt8]) {
        guard envelope.count > 11, envelope[0] == 0x08 else { return }
        var value = id
        for i in 1...10 {
            envelope[i] = UInt8(value & 0x7F) | (i < 10 ? 0x80 : 0)
            value >>= 7
        }
    }
}

/// A SUB socket that subscribes to whatever it is told, as fast as it is told.
final class RawSubscriber: @unchecked Sendable {
    private let socket: UnsafeMutableRawPointer

    init(endpoint: String, serverKey: String, keys: CurveKeyPair) throws {
        socket = try RawZMQ.socket(ZMQ_SUB, endpoint: endpoint, serverKey: serverKey, keys: keys)
    }

    func subscribe(_ prefix: [UInt8]) {
        _ = prefix.withUnsafeBytes { zmq_setsockopt(socket, ZMQ_SUBSCRIBE, $0.baseAddress, $0.count) }
    }

    func close() { zmq_close(socket) }
}

enum RawZMQ {
    /// One context for every raw socket of the benchmark.
    nonisolated(unsafe) static let context: UnsafeMutableRawPointer = zmq_ctx_new()

    static func socket(_ type: Int32, endpoint: String, serverKey: String, keys: CurveKeyPair) throws -> UnsafeMutableRawPointer {
        guard let socket = zmq_socket(context, type) else { throw BenchError("zmq_socket: \(String(cString: zmq_strerror(zmq_errno())))") }
        var zero: Int32 = 0
        zmq_setsockopt(socket, ZMQ_LINGER, &zero, MemoryLayout<Int32>.size)
        zmq_setsockopt(socket, ZMQ_SNDHWM, &zero, MemoryLayout<Int32>.size)
        for (option, key) in [(ZMQ_CURVE_SERVERKEY, serverKey), (ZMQ_CURVE_PUBLICKEY, keys.publicKey), (ZMQ_CURVE_SECRETKEY, keys.secretKey)] {
            let text = Array(key.utf8)
            guard text.withUnsafeBytes({ zmq_setsockopt(socket, option, $0.baseAddress, $0.count) }) == 0 else {
                throw BenchError("CURVE key rejected: \(String(cString: zmq_strerror(zmq_errno())))")
            }
        }
        guard zmq_connect(socket, endpoint) == 0 else { throw BenchError("zmq_connect \(endpoint): \(String(cString: zmq_strerror(zmq_errno())))") }
        return socket
    }
}

/// A thread that runs `body` once; `join` waits for it.
final class BackgroundThread: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)

    init(_ body: @escaping @Sendable () -> Void) {
        let done = self.done
        let thread = Thread {
            body()
            done.signal()
        }
        thread.start()
    }

    func join() { done.wait() }
}


extension Report {
    static func hostileSection(_ env: RunEnvironment, _ r: HostileReport) -> String {
        func ms(_ v: [Double], _ p: Double) -> String { Fmt.f(Stats.percentile(v, p), 2) }
        var s = "## Daemon on a hostile LAN\n\n" + runLine(env) + "\n\n"
        s += "`earshotd` (release, CURVE on as shipped, started with \(r.fileLimit) file descriptors: systemd's default soft limit, "
            + "which it then cannot raise (the hard limit is the same); \(r.connectionCap) connections allowed after its reserve) with a \(r.catalog) and a programme "
            + "played in real time. An allow-listed operator calls `Match` back to back (10 ms apart) while each attack runs; "
            + "attackers run in the benchmark process on the same 2 cores, so every row also carries their CPU cost.\n\n"
        s += "| attack | good client's `Match` | daemon CPU | what it cost the daemon |\n|---|---|---|---|\n"
        for row in r.rows {
            s += "| \(row.attack) | \(row.latencies.count) calls, \(row.errors) errors; p50 \(ms(row.latencies, 50)) ms, p99 \(ms(row.latencies, 99)) ms, "
                + "max \(Fmt.f(row.latencies.max(), 2)) ms | \(Fmt.f(row.daemonCPU)) % of a core | \(row.detail.isEmpty ? "—" : row.detail) |\n"
        }
        return s
    }
}
