import EarshotCrypto
import EarshotStore
import EarshotTestSupport
import EarshotSync
import EarshotWire
import Foundation
import SQLite
import Testing

@testable import EarshotTransport

/// The Library service through a real earshotd process over real CURVE: kill -9 during writes; a
/// damaged database found at start, a move aside interrupted; a library the daemon's user may not
/// write. (What the service answers is `InProcessDaemonTests.DaemonLibraryServiceTests`';
/// migrations from earlier schema versions are covered by the store's tests.)
@Suite("earshotd library", .serialized)
struct DaemonLibraryTests {

    // MARK: kill -9

    /// Concurrent writers (two owners) add batches and remove items; earshotd is killed at a
    /// random moment, again and again. After each restart every acknowledged change is there,
    /// every batch and removal is whole or absent, versions only go up, and at the end the file
    /// passes quick_check. EARSHOT_LIBRARY_KILL_CYCLES sets the number of kills (5;
    /// scripts/library-kill-loop.sh runs 200).
    @Test func killedDuringAddsAndRemovesItLosesNoAcknowledgedChange() async throws {
        let cycles = ProcessInfo.processInfo.environment["EARSHOT_LIBRARY_KILL_CYCLES"].flatMap(Int.init) ?? 5
        let settings = ["--session.prepare_on_start=false"]
        let first = try await DaemonHarness(settings: settings)
        defer { first.stop() }
        let folder = first.directory, keys = first.clientKeys
        let ledger = KillLedger()
        var daemon = first
        var floors: [String: UInt64] = [:]
        for cycle in 0..<cycles {
            if cycle > 0 {
                daemon = try await DaemonHarness(reusing: folder, clientKeys: keys, settings: settings)
                floors = try await ledger.verify(daemon, after: cycle, floors: floors)
            }
            let workers = try (0..<4).map { w in
                try KillWorker(number: w, role: w == 3 ? .viewer : .operator, daemon: daemon, ledger: ledger, cycle: cycle)
            }
            try await eventually("cycle \(cycle): writes are acknowledged", within: .seconds(30)) { ledger.acknowledged(in: cycle) >= 2 }
            try await Task.sleep(for: .milliseconds(Int.random(in: 0...400)))
            daemon.kill9()
            for w in workers { await w.stop() }
            print("library kill cycle \(cycle): \(ledger.summary)")
        }
        let last = try await DaemonHarness(reusing: folder, clientKeys: keys, settings: settings)
        defer { last.stop() }
        _ = try await ledger.verify(last, after: cycles, floors: floors)
        #expect(last.stop() == 0)
        let db = try SQLiteConnection(path: folder.appendingPathComponent("state/library.db").path, mode: .readWrite)
        #expect(try db.quickCheck().isEmpty)
        #expect(!last.log.contains("damaged"), "a kill left a damaged database:\n\(last.log)")
    }

    // MARK: Damage

    enum Damage: String, CaseIterable, Sendable {
        case bitFlipsInTheMiddle, truncatedToHalf, foreignRandomBytes
    }

    @Test(arguments: Damage.allCases)
    func damagedDatabaseIsMovedAsideAndTheLibraryStaysDownUntilRestoredOrReset(_ damage: Damage) async throws {
        let settings = ["--session.prepare_on_start=false"]
        let daemon = try await DaemonHarness(settings: settings)
        defer { daemon.stop() }
        let keys = daemon.clientKeys, state = daemon.directory.appendingPathComponent("state")
        let path = state.appendingPathComponent("library.db").path
        do {
            let viewer = try daemon.client(.viewer)
            defer { viewer.close() }
            for i in 0..<4 { _ = try await Lib.add(viewer, (0..<5).map { Lib.new(title: "item \(i).\($0)") }) }
        }
        let backup: Earshot_V1_LibraryBackupResponse
        do {
            let admin = try daemon.client(.admin)
            defer { admin.close() }
            backup = try await admin.call(Methods.Library.backup, Earshot_V1_LibraryBackupRequest())
            #expect(backup.items == 20 && FileManager.default.fileExists(atPath: backup.path))
            // The reply describes the file written: its size and SHA-256.
            let written = try [UInt8](Data(contentsOf: URL(fileURLWithPath: backup.path)))
            #expect(backup.bytes == UInt64(written.count))
            #expect(backup.sha256 == SHA256.hex(written.withUnsafeBytes { SHA256.hash($0) }))
        }
        #expect(daemon.stop() == 0)
        do {  // everything into the main file, and no WAL left beside it
            let db = try SQLiteConnection(path: path, mode: .readWrite)
            _ = try db.scalar("PRAGMA wal_checkpoint(TRUNCATE)")
        }
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        switch damage {
        case .bitFlipsInTheMiddle:
            // The header of a b-tree page in the middle of the file: what quick_check reads.
            let pageSize = Int(bytes[16]) << 8 | Int(bytes[17])
            let pages = bytes.count / pageSize
            let page = try #require(((pages / 2)..<pages).first { [2, 5, 10, 13].contains(bytes[$0 * pageSize]) },
                                    "no b-tree page in the second half of \(pages) pages")
            for i in 0..<8 { bytes[page * pageSize + i] ^= 0xA5 }
        case .truncatedToHalf:
            bytes = Array(bytes.prefix(bytes.count / 2))
        case .foreignRandomBytes:
            bytes = (0..<bytes.count).map { _ in UInt8.random(in: 0...255) }
        }
        try Data(bytes).write(to: URL(fileURLWithPath: path))

        let damaged = try await DaemonHarness(reusing: daemon.directory, clientKeys: keys, settings: settings)
        defer { damaged.stop() }
        let viewer = try damaged.client(.viewer), op = try damaged.client(.operator)
        defer { [viewer, op].forEach { $0.close() } }
        let moved = try FileManager.default.contentsOfDirectory(atPath: state.path).filter {
            $0.hasPrefix("library.db.damaged-") && !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm")
        }
        #expect(moved.count == 1, "\(moved)")
        let aside = state.appendingPathComponent(try #require(moved.first)).path
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: aside))) == bytes, "the damaged file was changed")
        #expect(!FileManager.default.fileExists(atPath: path), "a new database was made in the damaged one's place")

        // Library calls answer the problem, naming where the file went; Health says it too.
        var reported = false
        func expectDataLoss(_ call: () async throws -> Void) async {
            do {
                try await call()
                Issue.record("a library call succeeded on a damaged database")
            } catch let error as RpcError {
                #expect(error.code == .dataLoss, "\(error)")
                #expect(error.message.contains(aside), "\(error.message)")
                if !reported { print("library \(damage): \(error.code): \(error.message)") }
                reported = true
            } catch {
                Issue.record("\(error)")
            }
        }
        await expectDataLoss { _ = try await Lib.all(viewer) }
        await expectDataLoss { _ = try await Lib.add(viewer, [Lib.new(title: "new")]) }
        await expectDataLoss { for try await _ in Lib.watch(viewer, from: 0) {} }
        var check = Earshot_V1_HealthCheckRequest()
        check.service = "earshot.v1.Library"
        let health = try await viewer.call(Methods.Health.check, check)
        #expect(health.status == .notServing && health.message.contains(aside) && health.message.contains("To recover"))
        check.service = ""
        #expect(try await viewer.call(Methods.Health.check, check).status == .serving)
        let result = try await op.call(Methods.Recognizer.match, Earshot_V1_MatchRequest(), timeout: .seconds(60))
        #expect(result.outcome == .match, "recognition stopped with the library")
        #expect(damaged.log.contains("damaged") && damaged.log.contains("To recover") && damaged.log.contains(aside))
        #expect(damaged.stop() == 0)

        // Restarting does not quietly begin an empty library: the note keeps it down.
        let note = path + ".damaged.txt"
        #expect(FileManager.default.fileExists(atPath: note))
        do {
            let again = try await DaemonHarness(reusing: daemon.directory, clientKeys: keys, settings: settings)
            defer { again.stop() }
            let client = try again.client(.viewer)
            defer { client.close() }
            await expectCode(.dataLoss) { () throws(RpcError) in _ = try await client.call(Methods.Library.items, Earshot_V1_LibraryItemsRequest()) }
            check.service = "earshot.v1.Library"
            let down = try await client.call(Methods.Health.check, check)
            #expect(down.status == .notServing && down.message.contains(aside), "\(down.message)")
            #expect(!FileManager.default.fileExists(atPath: path))
            #expect(again.stop() == 0)
        }

        // The operator deletes the note: an empty library begins, the damaged file stays.
        try FileManager.default.removeItem(atPath: note)
        do {
            let fresh = try await DaemonHarness(reusing: daemon.directory, clientKeys: keys, settings: settings)
            defer { fresh.stop() }
            let client = try fresh.client(.viewer)
            defer { client.close() }
            let empty = try await Lib.all(client)
            #expect(empty.items.isEmpty && empty.version == 0)
            check.service = "earshot.v1.Library"
            #expect(try await client.call(Methods.Health.check, check).status == .serving)
            #expect(try await Lib.add(client, [Lib.new(title: "fresh")]).version == 1)
            #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: aside))) == bytes)
            #expect(fresh.stop() == 0)
        }

        // Or restores the backup taken before the damage: every item is back.
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        try FileManager.default.copyItem(atPath: backup.path, toPath: path)
        let restored = try await DaemonHarness(reusing: daemon.directory, clientKeys: keys, settings: settings)
        defer { restored.stop() }
        let client = try restored.client(.viewer)
        defer { client.close() }
        let back = try await Lib.all(client)
        #expect(back.items.count == 20 && back.version == 4 + LibraryDatabase.restoreVersionGap, "a restored library's versions jump")
        #expect(restored.stop() == 0)
    }

    /// Killed while moving a damaged database aside (the note written, the WAL moved, the file
    /// not yet): the next start finishes the move instead of opening what is left, and stays down.
    @Test func anInterruptedSetAsideIsFinishedAtTheNextStart() async throws {
        let settings = ["--session.prepare_on_start=false"]
        let daemon = try await DaemonHarness(settings: settings)
        defer { daemon.stop() }
        do {
            let viewer = try daemon.client(.viewer)
            defer { viewer.close() }
            _ = try await Lib.add(viewer, [Lib.new(title: "kept")])
        }
        #expect(daemon.stop() == 0)
        let path = daemon.directory.appendingPathComponent("state/library.db").path
        let aside = path + ".damaged-20261126T000000.000Z"
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        try Data("moved-to \(aside)\nthe library database was damaged. To recover: …\n".utf8)
            .write(to: URL(fileURLWithPath: path + ".damaged.txt"))
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: aside + "-wal"))  // what had been moved already

        let again = try await DaemonHarness(reusing: daemon.directory, clientKeys: daemon.clientKeys, settings: settings)
        defer { again.stop() }
        let viewer = try again.client(.viewer)
        defer { viewer.close() }
        await expectCode(.dataLoss) { () throws(RpcError) in _ = try await viewer.call(Methods.Library.items, Earshot_V1_LibraryItemsRequest()) }
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(try Data(contentsOf: URL(fileURLWithPath: aside)) == before, "the file was not moved whole")
        #expect(again.log.contains("finished moving the damaged database aside"))
        #expect(again.stop() == 0)
    }

    // MARK: Permissions

    @Test func unwritableLibraryFolderLeavesRecognitionServing() async throws {
        // A library folder only root may write in, and the daemon running as nobody.
        let folder = try Self.rootFolder()
        let ro = folder.url
        try Self.makeReadOnly(ro)
        let path = ro.appendingPathComponent("library.db").path
        let daemon = try await DaemonHarness(settings: ["--session.prepare_on_start=false", "--library.path=\(path)"], unprivileged: true)
        defer { daemon.stop() }
        #expect(Self.user(of: daemon) == Self.unprivilegedUID, "setpriv did not take")
        let viewer = try daemon.client(.viewer), op = try daemon.client(.operator)
        defer { [viewer, op].forEach { $0.close() } }
        var message = ""
        await expectCode(.unavailable) { () throws(RpcError) in
            do throws(RpcError) { _ = try await Lib.all(viewer) } catch { message = error.message; throw error }
        }
        #expect(message.contains(path) && message.contains("Recognition goes on"), "\(message)")
        print("library unwritable: \(message)")
        await expectCode(.unavailable) { () throws(RpcError) in _ = try await Lib.add(viewer, [Lib.new(title: "x")]) }
        var check = Earshot_V1_HealthCheckRequest()
        check.service = "earshot.v1.Library"
        let health = try await viewer.call(Methods.Health.check, check)
        #expect(health.status == .notServing && health.message == message)
        let result = try await op.call(Methods.Recognizer.match, Earshot_V1_MatchRequest(), timeout: .seconds(60))
        #expect(result.outcome == .match)
        #expect(try FileManager.default.contentsOfDirectory(atPath: ro.path).isEmpty)
        #expect(daemon.stop() == 0)
    }

    @Test func readOnlyDatabaseIsNeverWritten() async throws {
        // A library written by a daemon running as root, left as it leaves it, in a folder only
        // root may write in; then the daemon runs as nobody.
        let folder = try Self.rootFolder()
        let ro = folder.url
        let path = ro.appendingPathComponent("library.db").path
        let settings = ["--session.prepare_on_start=false", "--library.path=\(path)"]
        let root = try await DaemonHarness(settings: settings)
        defer { root.stop() }
        let stored: Set<String>
        do {
            let viewer = try root.client(.viewer)
            defer { viewer.close() }
            stored = Set(try await Lib.add(viewer, [Lib.new(title: "kept 1"), Lib.new(title: "kept 2")]).items.map(\.id))
        }
        #expect(root.stop() == 0)
        try DaemonHarness.giveToNobody(root.directory)
        let names = try FileManager.default.contentsOfDirectory(atPath: ro.path).sorted()
        try Self.makeReadOnly(ro)
        let before = try Self.contents(of: ro)
        print("library read-only: files left by the root daemon: \(names)")

        let daemon = try await DaemonHarness(reusing: root.directory, clientKeys: root.clientKeys, settings: settings, unprivileged: true)
        defer { daemon.stop() }
        #expect(Self.user(of: daemon) == Self.unprivilegedUID, "setpriv did not take")
        let viewer = try daemon.client(.viewer), op = try daemon.client(.operator)
        defer { [viewer, op].forEach { $0.close() } }
        // Reads serve; writes are refused at once with why, and Health says the same.
        let items = try await Lib.all(viewer)
        #expect(Set(items.items.map(\.id)) == stored)
        var message = ""
        await expectCode(.unavailable) { () throws(RpcError) in
            do throws(RpcError) { _ = try await Lib.add(viewer, [Lib.new(title: "not kept")]) } catch { message = error.message; throw error }
        }
        #expect(message.contains(path) && message.contains("can only be read"), "\(message)")
        var remove = Earshot_V1_RemoveLibraryItemsRequest()
        remove.ids = Array(stored)
        await expectCode(.unavailable) { () throws(RpcError) in _ = try await viewer.call(Methods.Library.remove, remove) }
        var check = Earshot_V1_HealthCheckRequest()
        check.service = ""
        #expect(try await viewer.call(Methods.Health.check, check).status == .serving)
        check.service = "earshot.v1.Library"
        let health = try await viewer.call(Methods.Health.check, check)
        #expect(health.status == .notServing && health.message == message, "\(health)")
        #expect(daemon.stop() == 0)
        #expect(try Self.contents(of: ro) == before, "the read-only library's files changed")
    }

    // MARK: Helpers

    /// The real user id of a running process.
    static func user(of daemon: DaemonHarness) -> uid_t? {
        let status = ProcFile.text("/proc/\(daemon.process.processIdentifier)/status") ?? ""
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Uid:") }) else { return nil }
        return line.split(whereSeparator: { $0 == "\t" || $0 == " " }).dropFirst().first.flatMap { uid_t($0) }
    }

    /// The user an unprivileged daemon runs as: nobody under root, else the tests' own user.
    static let unprivilegedUID = DaemonHarness.runningAsRoot ? getpwnam(DaemonHarness.unprivilegedUser.name).map { $0.pointee.pw_uid } : getuid()

    /// A new folder, mode 0755, of the tests' user: under root the unprivileged daemon (nobody)
    /// may read it but not write in it; otherwise `makeReadOnly` makes it so. Removed with the
    /// value, read-only or not.
    static func rootFolder() throws -> TemporaryDirectory {
        let folder = try TemporaryDirectory("earshot-ro")
        chmod(folder.path, 0o755)
        return folder
    }

    /// Makes `folder` and its files read-only for the unprivileged daemon: files 0644 owned by
    /// root under root (the daemon is nobody), else files 0444 and the folder 0555.
    static func makeReadOnly(_ folder: URL) throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        for name in names { chmod(folder.appendingPathComponent(name).path, DaemonHarness.runningAsRoot ? 0o644 : 0o444) }
        if !DaemonHarness.runningAsRoot { chmod(folder.path, 0o555) }
    }

    /// Every file in `folder` and its bytes.
    static func contents(of folder: URL) throws -> [String: Data] {
        var out: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) {
            out[name] = try Data(contentsOf: folder.appendingPathComponent(name))
        }
        return out
    }
}

/// Library calls the tests make again and again.
enum Lib {
    /// A matched item as a match gives it, matched at `at` (0: now).
    static func new(_ item: Earshot_V1_MatchedMediaItem, at: Int64 = 0) -> Earshot_V1_NewLibraryItem {
        var n = Earshot_V1_NewLibraryItem()
        n.item = item
        n.matchedAtUnixMs = at
        return n
    }

    /// A made-up item of the fixture's catalog.
    static func new(title: String, properties: String = "{}", at: Int64 = 0) -> Earshot_V1_NewLibraryItem {
        var item = Earshot_V1_MatchedMediaItem()
        item.catalog = "show"
        item.catalogVersion = 1
        item.confidence = 0.9
        item.matchOffset = 12.5
        item.mediaItem.id = "piece1"
        item.mediaItem.title = title
        item.mediaItem.customPropertiesJson = properties
        return new(item, at: at)
    }

    static func add(_ client: RpcClient, _ items: [Earshot_V1_NewLibraryItem], timeout: Duration? = nil) async throws(RpcError) -> Earshot_V1_LibraryWriteResponse {
        var request = Earshot_V1_AddLibraryItemsRequest()
        request.items = items
        return try await client.call(Methods.Library.add, request, timeout: timeout)
    }

    /// Every page of Items, `size` at a time.
    static func pages(_ client: RpcClient, size: UInt32 = 1000, owner: String = "",
                      property: (key: String, value: String)? = nil) async throws(RpcError) -> [Earshot_V1_LibraryItemsResponse] {
        var request = Earshot_V1_LibraryItemsRequest()
        request.pageSize = size
        request.owner = owner
        if let property {
            request.propertyKey = property.key
            request.propertyValueJson = property.value
        }
        var pages: [Earshot_V1_LibraryItemsResponse] = []
        repeat {
            let page = try await client.call(Methods.Library.items, request)
            pages.append(page)
            request.pageToken = page.nextPageToken
        } while !request.pageToken.isEmpty && pages.count < 100_000
        return pages
    }

    /// All items (the last page's version and counts, every page's items).
    static func all(_ client: RpcClient, owner: String = "", property: (key: String, value: String)? = nil) async throws(RpcError) -> Earshot_V1_LibraryItemsResponse {
        let pages = try await pages(client, owner: owner, property: property)
        var all = pages.last!
        all.items = pages.flatMap(\.items)
        return all
    }

    static func owners(_ admin: RpcClient) async throws(RpcError) -> [String: Earshot_V1_LibraryOwner] {
        let reply = try await admin.call(Methods.Library.listOwners, Earshot_V1_ListLibraryOwnersRequest())
        return Dictionary(uniqueKeysWithValues: reply.owners.map { ($0.name, $0) })
    }

    static func watch(_ client: RpcClient, from version: UInt64) -> AsyncThrowingStream<Earshot_V1_LibraryChange, Error> {
        var request = Earshot_V1_WatchLibraryRequest()
        request.fromVersion = version
        return client.stream(Methods.Library.watchLibrary, request, timeout: .seconds(60))
    }

    /// The changes up to and with the next CURRENT.
    static func untilCurrent(_ iterator: inout AsyncThrowingStream<Earshot_V1_LibraryChange, Error>.Iterator) async throws -> [Earshot_V1_LibraryChange] {
        var got: [Earshot_V1_LibraryChange] = []
        while let change = try await iterator.next() {
            got.append(change)
            if change.kind == .current || got.count > 1000 { break }
        }
        return got
    }

}

/// A SUB socket read by hand, so the test sees the bytes the daemon published (topic and
/// envelope frames), with the daemon's CURVE keys. It waits for a heartbeat before returning:
/// from then on nothing published is missed.
final class RawSubscriber: @unchecked Sendable {
    struct Event {
        var frames: [[UInt8]]
        var envelope: Earshot_V1_EventEnvelope
    }

    private let socket: ZMQSocket
    private let lock = NSLock()
    private var events: [Event] = []

    init(_ daemon: some RunningDaemon, _ role: ClientRole, topic: String) async throws {
        socket = try ZMQSocket(.sub)
        try socket.set(.linger, 0)
        try daemon.security(role)?.apply(to: socket)
        for t in [topic, Topics.heartbeat] { try socket.set(.subscribe, Array(t.utf8)) }
        try socket.connect(daemon.eventsEndpoint)
        try await eventually("a heartbeat reaches the subscriber", within: .seconds(15)) {
            drain().contains { $0.envelope.topic.hasPrefix(Topics.heartbeat) }
        }
    }

    deinit { socket.close() }

    /// Reads what arrived; returns everything read so far.
    @discardableResult
    private func drain() -> [Event] {
        lock.lock()
        defer { lock.unlock() }
        while let message = try? socket.receive(maximumFrames: 4) {
            guard message.frames.count == 2, let envelope = try? Earshot_V1_EventEnvelope(serializedBytes: message.frames[1]) else {
                continue
            }
            events.append(Event(frames: message.frames, envelope: envelope))
        }
        return events
    }

    /// The first event (not a heartbeat) that satisfies `condition`, once it arrived.
    func waitFor(_ what: String, _ condition: (Earshot_V1_EventEnvelope) -> Bool) async throws -> Event {
        try await eventually(what, {
            self.drain().first { !$0.envelope.topic.hasPrefix(Topics.heartbeat) && condition($0.envelope) }
        }, until: { $0 != nil })!
    }
}

extension Array where Element == UInt8 {
    func contains(subsequence needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= count else { return needle.isEmpty }
        return (0...(count - needle.count)).contains { i in self[i..<(i + needle.count)].elementsEqual(needle) }
    }
}

// MARK: kill -9 bookkeeping

/// What the writers of the kill test sent and what was acknowledged, and the checks after a
/// restart. Every batch carries {"batch": "<uuid>"} in its items' custom properties, so that a
/// batch whose reply was lost can be found (all of it, or none).
final class KillLedger: Sendable {
    struct Batch {
        var owner: String
        var size: Int
        /// The ids, once known: from the reply, or found after a restart.
        var ids: [String]?
        var removed: Set<String> = []
        /// Removals sent without an answer: each is all done or not at all.
        var uncertainRemovals: [[String]] = []
        var worker: Int
    }

    struct State {
        var batches: [String: Batch] = [:]
        /// Acknowledged versions by owner, with the cycle they were acknowledged in.
        var versions: [String: [(cycle: Int, version: UInt64)]] = [:]
        var acknowledged: [Int: Int] = [:]
        var sent = 0
    }

    let state = Locked(State())

    func acknowledged(in cycle: Int) -> Int { state.withLock { $0.acknowledged[cycle, default: 0] } }

    var summary: String {
        state.withLock { s in
            let known = s.batches.values.filter { $0.ids != nil }
            return "\(s.sent) writes sent, \(s.acknowledged.values.reduce(0, +)) acknowledged; \(known.count) batches known, \(s.batches.count - known.count) uncertain"
        }
    }

    func sent(_ uuid: String, owner: String, size: Int, worker: Int) {
        state.withLock {
            $0.batches[uuid] = Batch(owner: owner, size: size, worker: worker)
            $0.sent += 1
        }
    }

    func added(_ uuid: String, _ reply: Earshot_V1_LibraryWriteResponse, cycle: Int) {
        state.withLock {
            $0.batches[uuid]?.ids = reply.items.map(\.id)
            $0.versions[$0.batches[uuid]!.owner, default: []].append((cycle, reply.version))
            $0.acknowledged[cycle, default: 0] += 1
        }
    }

    /// Items of `worker` known to be stored.
    func live(worker: Int) -> Int {
        state.withLock { s in
            var count = 0
            for b in s.batches.values where b.worker == worker { count += (b.ids?.count ?? 0) - b.removed.count }
            return count
        }
    }

    /// A batch of `worker` with items left to remove, and some of them.
    func removable(worker: Int) -> (uuid: String, ids: [String])? {
        state.withLock { s in
            let candidates = s.batches.filter { $0.value.worker == worker && $0.value.uncertainRemovals.isEmpty }.compactMap { uuid, b -> (String, [String])? in
                guard let ids = b.ids else { return nil }
                let left = ids.filter { !b.removed.contains($0) }
                return left.isEmpty ? nil : (uuid, left)
            }
            guard let (uuid, left) = candidates.randomElement() else { return nil }
            s.sent += 1
            return (uuid, Array(left.shuffled().prefix(Int.random(in: 1...left.count))))
        }
    }

    func removed(_ uuid: String, _ ids: [String], _ reply: Earshot_V1_LibraryWriteResponse?, cycle: Int) {
        state.withLock {
            if let reply {
                $0.batches[uuid]?.removed.formUnion(ids)
                $0.versions[$0.batches[uuid]!.owner, default: []].append((cycle, reply.version))
                $0.acknowledged[cycle, default: 0] += 1
            } else {
                $0.batches[uuid]?.uncertainRemovals.append(ids)
            }
        }
    }

    /// Checks the restarted daemon against the ledger, settles what was uncertain, and returns
    /// each owner's version now (the floor every later acknowledgement must pass).
    func verify(_ daemon: DaemonHarness, after cycle: Int, floors: [String: UInt64]) async throws -> [String: UInt64] {
        let admin = try daemon.client(.admin)
        defer { admin.close() }
        var snapshot = state.withLock { $0 }
        var newFloors = floors
        var report: [String] = []
        var (lostFound, lostAbsent, removalsDone, removalsNot) = (0, 0, 0, 0)
        for owner in ["operator", "viewer"] {
            let all = try await Lib.all(admin, owner: owner)
            let acked = (snapshot.versions[owner] ?? [])
            #expect(Set(acked.map(\.version)).count == acked.count, "\(owner): a version was acknowledged twice: \(acked.map(\.version))")
            for (c, v) in acked where c == cycle - 1 {
                #expect(v > floors[owner, default: 0], "\(owner): version \(v) acknowledged in cycle \(c) is not above \(floors[owner, default: 0]) at its start")
            }
            let highest = acked.map(\.version).max() ?? 0
            #expect(all.version >= highest, "\(owner): version \(all.version) after the restart, \(highest) was acknowledged")
            #expect(all.version >= floors[owner, default: 0], "\(owner): the version went back")
            newFloors[owner] = all.version
            report.append("\(owner) v\(all.version) \(all.items.count) items")
            #expect(Int(all.itemCount) == all.items.count)

            // Every stored item belongs to a batch this owner sent.
            var found: [String: Set<String>] = [:]
            for item in all.items {
                let properties = try JSONSerialization.jsonObject(with: Data(item.item.mediaItem.customPropertiesJson.utf8)) as? [String: Any]
                let uuid = try #require(properties?["batch"] as? String, "an item without a batch: \(item)")
                #expect(snapshot.batches[uuid]?.owner == owner, "item \(item.id) of batch \(uuid) is not one \(owner) sent")
                found[uuid, default: []].insert(item.id)
            }
            for (uuid, batch) in snapshot.batches where batch.owner == owner {
                // The property filter finds the same (and is how a lost batch is looked for).
                let present = found[uuid] ?? []
                if let ids = batch.ids {
                    let uncertain = Set(batch.uncertainRemovals.flatMap { $0 })
                    let expected = Set(ids).subtracting(batch.removed).subtracting(uncertain)
                    #expect(expected.isSubset(of: present), "batch \(uuid): acknowledged items lost: \(expected.subtracting(present))")
                    #expect(present.isDisjoint(with: batch.removed), "batch \(uuid): removed items came back")
                    #expect(present.isSubset(of: Set(ids)), "batch \(uuid): items that were never added")
                    var removed = batch.removed
                    for removal in batch.uncertainRemovals {
                        let left = Set(removal).intersection(present)
                        #expect(left.isEmpty || left.count == removal.count, "batch \(uuid): a removal half done: \(left.count) of \(removal.count) left")
                        if left.isEmpty { removed.formUnion(removal); removalsDone += 1 } else { removalsNot += 1 }
                    }
                    snapshot.batches[uuid]?.removed = removed
                    snapshot.batches[uuid]?.uncertainRemovals = []
                    // A batch all removed is forgotten: an item of it that came back would
                    // belong to no batch, which the check above catches.
                    if removed.isSuperset(of: ids) { snapshot.batches[uuid] = nil }
                } else {
                    // A batch whose reply was lost, looked for as a client would: by its property.
                    let filtered = try await Lib.all(admin, owner: owner, property: ("batch", "\"\(uuid)\""))
                    #expect(Set(filtered.items.map(\.id)) == present)
                    #expect(present.isEmpty || present.count == batch.size, "batch \(uuid): \(present.count) of \(batch.size) items: half applied")
                    if present.isEmpty { snapshot.batches[uuid] = nil; lostAbsent += 1 } else { snapshot.batches[uuid]?.ids = Array(present); lostFound += 1 }
                }
            }
        }
        state.withLock { $0.batches = snapshot.batches }
        print("library kill check after cycle \(cycle - 1): \(report.joined(separator: ", ")); unanswered adds: \(lostFound) applied, \(lostAbsent) not; unanswered removals: \(removalsDone) applied, \(removalsNot) not")
        return newFloors
    }
}

/// One writer of the kill test: adds batches of 1–5 items and removes some of its own items
/// (more once it has 100), as fast as the daemon answers, until stopped.
final class KillWorker: Sendable {
    private let client: RpcClient
    private let task: Task<Void, Never>

    init(number: Int, role: ClientRole, daemon: DaemonHarness, ledger: KillLedger, cycle: Int) throws {
        let client = try daemon.client(role)
        self.client = client
        let owner = role.rawValue
        task = Task.detached {
            while !Task.isCancelled {
                let removeOdds = ledger.live(worker: number) > 100 ? 2 : 1
                if Int.random(in: 0..<3) < removeOdds, let (uuid, ids) = ledger.removable(worker: number) {
                    var request = Earshot_V1_RemoveLibraryItemsRequest()
                    request.ids = ids
                    do throws(RpcError) {
                        ledger.removed(uuid, ids, try await client.call(Methods.Library.remove, request, timeout: .seconds(5)), cycle: cycle)
                    } catch {
                        ledger.removed(uuid, ids, nil, cycle: cycle)
                        if error.code == .notFound { Issue.record("worker \(number): removing its own items: \(error)") }
                        try? await Task.sleep(for: .milliseconds(50))
                    }
                } else {
                    let uuid = UUID().uuidString
                    let items = (0..<Int.random(in: 1...5)).map {
                        Lib.new(title: "w\(number) \($0)", properties: #"{"batch": "\#(uuid)", "worker": \#(number)}"#)
                    }
                    ledger.sent(uuid, owner: owner, size: items.count, worker: number)
                    do throws(RpcError) {
                        ledger.added(uuid, try await Lib.add(client, items, timeout: .seconds(5)), cycle: cycle)
                    } catch {
                        try? await Task.sleep(for: .milliseconds(50))
                    }
                }
            }
        }
    }

    /// Stops the writer (its call in flight fails: the client is closed) and waits for it.
    func stop() async {
        task.cancel()
        client.close()
        await task.value
    }
}
