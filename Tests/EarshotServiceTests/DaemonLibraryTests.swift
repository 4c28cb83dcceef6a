import EarshotCrypto
import EarshotStore
import EarshotTestSupport
import EarshotSync
import EarshotWire
import Foundation
import SQLite
import Testing

@testable import EarshotTransport

/// The Library service through a real earshotd over real CURVE: each key's library, private to
/// it; notices without contents; resumable watches; kill -9 during writes; a damaged, unwritable
/// or full database. (Migrations from earlier schema versions are covered by the store's tests.)
@Suite("earshotd library", .serialized)
struct DaemonLibraryTests {
    // MARK: Round trip

    @Test func addItemsRemoveAndMatchIntoTheLibraryOverCurve() async throws {
        let daemon = try DaemonHarness()
        defer { daemon.stop() }
        let op = try daemon.client(.operator)
        defer { op.close() }
        let matches = try RawSubscriber(daemon, .operator, topic: Topics.match)

        // Items from a real match: the programme plays piece 1.
        let result = try await op.call(Methods.Recognizer.match, Earshot_V1_MatchRequest(), timeout: .seconds(60))
        #expect(result.outcome == .match)
        #expect(!result.hasLibrary, "a Match without add_to_library says nothing about the library")
        let matched = try #require(result.items.first)
        #expect(matched.mediaItem.id == "piece1" && matched.catalog == "show")
        let t = result.madeAtUnixMs
        var older = Lib.new(matched, at: t - 2000), old = Lib.new(matched, at: t - 1000)
        older.item.confidence = 0.5
        old.item.confidence = 0.6

        let first = try await Lib.add(op, [older, old])
        #expect(first.version == 1 && first.itemCount == 2 && first.items.count == 2)
        #expect(first.items.map(\.item) == [older.item, old.item], "stored as given, in the order given")
        #expect(first.items.allSatisfy { $0.id.count == 32 && $0.matchedAtUnixMs > 0 && $0.addedAtUnixMs > 0 })
        let second = try await Lib.add(op, [Lib.new(matched, at: t)])
        #expect(second.version == 2 && second.itemCount == 3)
        #expect(second.ownerHash == first.ownerHash && !first.ownerHash.isEmpty)

        // Page by page (size 1), newest match first.
        let pages = try await Lib.pages(op, size: 1)
        #expect(pages.count == 3)
        #expect(pages.map(\.items.count) == [1, 1, 1] && pages.last?.nextPageToken == "")
        #expect(pages.flatMap(\.items).map(\.id) == [second.items[0].id, first.items[1].id, first.items[0].id])
        #expect(pages.allSatisfy { $0.version == 2 && $0.itemCount == 3 && $0.ownerHash == first.ownerHash && $0.bytes > 0 })

        var remove = Earshot_V1_RemoveLibraryItemsRequest()
        remove.ids = [first.items[1].id]
        let removed = try await op.call(Methods.Library.remove, remove)
        #expect(removed.version == 3 && removed.itemCount == 2)
        await expectCode(.notFound) { () throws(RpcError) in _ = try await op.call(Methods.Library.remove, remove) }

        // Match with add_to_library: the reply says how the add went; the published copy does not.
        var request = Earshot_V1_MatchRequest()
        request.addToLibrary = true
        let added = try await op.call(Methods.Recognizer.match, request, timeout: .seconds(60))
        #expect(added.outcome == .match)
        #expect(added.library.code == 0, "\(added.library.message)")
        #expect(added.library.version == 4 && added.library.itemIds.count == 1)
        let all = try await Lib.all(op)
        #expect(all.version == 4 && all.items.count == 3)
        #expect(Set(added.library.itemIds).isSubset(of: Set(all.items.map(\.id))))
        #expect(all.items.first { $0.id == added.library.itemIds.first }?.item.mediaItem.id == "piece1")

        let published = await matches.waitFor { $0.match.madeAtUnixMs == added.madeAtUnixMs && $0.match.outcome == .match }
        let copy = try #require(published, "the result was not published on match/")
        #expect(!copy.envelope.match.hasLibrary, "the published copy carries the caller's library status")
        #expect(copy.envelope.match.items == added.items)
        #expect(daemon.stop() == 0)
    }

    // MARK: Owners

    @Test func ownersAreIsolatedAndAdminsManageThem() async throws {
        let daemon = try DaemonHarness(settings: ["--session.prepare_on_start=false"])
        defer { daemon.stop() }
        let viewer = try daemon.client(.viewer), op = try daemon.client(.operator), admin = try daemon.client(.admin)
        defer { [viewer, op, admin].forEach { $0.close() } }

        let mine = try await Lib.add(viewer, [Lib.new(title: "viewer one"), Lib.new(title: "viewer two")])
        let theirs = try await Lib.add(op, [Lib.new(title: "operator one")])
        #expect(mine.version == 1 && theirs.version == 1, "each owner has its own versions")
        #expect(mine.ownerHash != theirs.ownerHash)
        let viewerIDs = Set(mine.items.map(\.id)), operatorIDs = Set(theirs.items.map(\.id))
        #expect(Set(try await Lib.all(viewer).items.map(\.id)) == viewerIDs)
        #expect(Set(try await Lib.all(op).items.map(\.id)) == operatorIDs)

        // Another owner's id is not found, whatever else the call names: nothing is removed.
        var remove = Earshot_V1_RemoveLibraryItemsRequest()
        remove.ids = [mine.items[0].id, theirs.items[0].id]
        await expectCode(.notFound) { () throws(RpcError) in _ = try await viewer.call(Methods.Library.remove, remove) }
        remove.ids = [mine.items[1].id]
        await expectCode(.notFound) { () throws(RpcError) in _ = try await op.call(Methods.Library.remove, remove) }
        #expect(Set(try await Lib.all(viewer).items.map(\.id)) == viewerIDs)
        #expect(Set(try await Lib.all(op).items.map(\.id)) == operatorIDs)
        let (viewerVersion, operatorVersion) = (try await Lib.all(viewer).version, try await Lib.all(op).version)
        #expect(viewerVersion == 1 && operatorVersion == 1)

        // Only an admin reads another owner's library (export).
        await expectCode(.permissionDenied) { () throws(RpcError) in _ = try await Lib.all(viewer, owner: "operator") }
        await expectCode(.permissionDenied) { () throws(RpcError) in _ = try await Lib.all(op, owner: "viewer") }
        let exported = try await Lib.all(admin, owner: "operator")
        #expect(Set(exported.items.map(\.id)) == operatorIDs && exported.ownerHash == theirs.ownerHash)
        await expectCode(.permissionDenied) { () throws(RpcError) in
            _ = try await viewer.call(Methods.Library.listOwners, Earshot_V1_ListLibraryOwnersRequest())
        }
        let owners = try await Lib.owners(admin)
        #expect(owners.keys.sorted() == ["operator", "viewer"])
        #expect(owners["viewer"]?.allowed == true && owners["operator"]?.allowed == true)
        #expect(owners["viewer"]?.itemCount == 2 && owners["viewer"]?.ownerHash == mine.ownerHash && owners["viewer"]?.version == 1)

        // A key taken out of the allow-list keeps its items until an admin deletes them.
        let keys = daemon.clientKeys
        try DaemonHarness.allowList([(keys[.operator]!, "operator", .operator), (keys[.admin]!, "admin", .admin)])
            .write(to: daemon.allowListURL, atomically: true, encoding: .utf8)
        #expect(await Lib.eventually { (try? await Lib.owners(admin))?["viewer"]?.allowed == false }, "ListOwners still says viewer is allowed")
        let revoked = try await Lib.owners(admin)
        #expect(revoked["viewer"]?.itemCount == 2 && revoked["operator"]?.allowed == true)
        #expect(Set(try await Lib.all(admin, owner: "viewer").items.map(\.id)) == viewerIDs)
        var delete = Earshot_V1_DeleteLibraryOwnerRequest()
        delete.owner = "viewer"
        await expectCode(.permissionDenied) { () throws(RpcError) in _ = try await op.call(Methods.Library.deleteOwner, delete) }
        let cleared = try await admin.call(Methods.Library.deleteOwner, delete)
        #expect(cleared.itemCount == 0 && cleared.version == 2)
        let afterwards = try await Lib.all(admin, owner: "viewer")
        #expect(afterwards.items.isEmpty && afterwards.itemCount == 0)
        #expect(Set(try await Lib.all(op).items.map(\.id)) == operatorIDs, "deleting one owner touched another")
        delete.owner = "nobody-at-all"
        await expectCode(.notFound) { () throws(RpcError) in _ = try await admin.call(Methods.Library.deleteOwner, delete) }
        #expect(daemon.log.contains("library: admin deleted the 2 items of viewer"), "\(daemon.log)")
        #expect(daemon.stop() == 0)
    }

    // MARK: Notices

    @Test func noticesNameTheOwnerByHashAndCarryNoContents() async throws {
        let daemon = try DaemonHarness(settings: ["--session.prepare_on_start=false"])
        defer { daemon.stop() }
        let viewer = try daemon.client(.viewer)
        defer { viewer.close() }
        let notices = try RawSubscriber(daemon, .admin, topic: Topics.library)
        let secret = "Secret Title \(UUID().uuidString)"
        let reply = try await Lib.add(viewer, [Lib.new(title: secret, properties: #"{"note": "\#(secret)"}"#), Lib.new(title: secret + " 2")])

        let heard = try #require(await notices.waitFor { $0.library.version == reply.version }, "no notice on library/")
        let notice = heard.envelope.library
        #expect(heard.envelope.topic.hasPrefix(Topics.library))
        #expect(notice.ownerHash == reply.ownerHash)
        #expect(notice.version == 1 && notice.itemCount == 2 && notice.kind == .added && notice.changed == 2)
        let raw = heard.frames.flatMap { $0 }
        for text in [secret, "viewer"] + reply.items.map(\.id) {
            #expect(!raw.contains(subsequence: Array(text.utf8)), "the notice's bytes contain \(text)")
        }

        var remove = Earshot_V1_RemoveLibraryItemsRequest()
        remove.ids = [reply.items[0].id]
        _ = try await viewer.call(Methods.Library.remove, remove)
        let removal = try #require(await notices.waitFor { $0.library.version == 2 }, "no notice for the removal")
        #expect(removal.envelope.library.kind == .removed && removal.envelope.library.changed == 1 && removal.envelope.library.itemCount == 1)
        #expect(!removal.frames.flatMap { $0 }.contains(subsequence: Array(reply.items[0].id.utf8)))
        #expect(daemon.stop() == 0)
    }

    // MARK: Watch

    @Test func watchResumesAfterADisconnectWithoutGapsOrRepeats() async throws {
        let daemon = try DaemonHarness(settings: ["--session.prepare_on_start=false"])
        defer { daemon.stop() }
        let writer = try daemon.client(.viewer)
        defer { writer.close() }
        let a = try await Lib.add(writer, [Lib.new(title: "a")])
        let b = try await Lib.add(writer, [Lib.new(title: "b1"), Lib.new(title: "b2")])

        // From 0: the backlog, then CURRENT.
        let firstClient = try daemon.client(.viewer)
        var first = Lib.watch(firstClient, from: 0).makeAsyncIterator()
        let backlog = try await Lib.untilCurrent(&first)
        #expect(backlog.map(\.kind) == [.added, .added, .current])
        #expect(backlog.map(\.version) == [1, 2, 2])
        #expect(backlog[0].itemIds == a.items.map(\.id) && backlog[0].items.map(\.id) == a.items.map(\.id))
        #expect(backlog[1].itemIds == b.items.map(\.id) && backlog[1].items.map(\.item.mediaItem.title) == ["b1", "b2"])
        let lastSeen = backlog.last!.version
        firstClient.close()  // the disconnect

        // Three changes while away, by another client of the same key.
        let c = try await Lib.add(writer, [Lib.new(title: "c")])
        var remove = Earshot_V1_RemoveLibraryItemsRequest()
        remove.ids = [a.items[0].id, b.items[1].id]
        let r = try await writer.call(Methods.Library.remove, remove)
        let d = try await Lib.add(writer, [Lib.new(title: "d")])
        #expect([c.version, r.version, d.version] == [3, 4, 5])

        let secondClient = try daemon.client(.viewer)
        defer { secondClient.close() }
        var second = Lib.watch(secondClient, from: lastSeen).makeAsyncIterator()
        let missed = try await Lib.untilCurrent(&second)
        #expect(missed.map(\.kind) == [.added, .removed, .added, .current])
        #expect(missed.map(\.version) == [3, 4, 5, 5])
        #expect(missed[0].itemIds == c.items.map(\.id) && missed[0].items.map(\.item.mediaItem.title) == ["c"])
        #expect(missed[1].itemIds == remove.ids && missed[1].items.isEmpty)
        #expect(missed[2].itemIds == d.items.map(\.id))
        #expect(missed[3].itemCount == 3)

        // Live: the next change comes on the open stream.
        let e = try await Lib.add(writer, [Lib.new(title: "e")])
        let live = try #require(try await second.next())
        #expect(live.kind == .added && live.version == e.version && live.version == 6 && live.itemIds == e.items.map(\.id))
        #expect(live.itemCount == 4)

        // A version ahead of the library: RESYNC at the library's version, then CURRENT.
        let thirdClient = try daemon.client(.viewer)
        defer { thirdClient.close() }
        var ahead = Lib.watch(thirdClient, from: 1_000_000).makeAsyncIterator()
        let resynced = try await Lib.untilCurrent(&ahead)
        #expect(resynced.map(\.kind) == [.resync, .current])
        #expect(resynced.first?.version == 6 && resynced.first?.itemCount == 4)
        #expect(daemon.stop() == 0)
    }

    @Test func watchFromBeyondAShortChangeLogResyncs() async throws {
        let daemon = try DaemonHarness(settings: ["--session.prepare_on_start=false", "--library.change_log_length=2"])
        defer { daemon.stop() }
        let viewer = try daemon.client(.viewer)
        defer { viewer.close() }
        for i in 1...5 { _ = try await Lib.add(viewer, [Lib.new(title: "item \(i)")]) }
        var fromZero = Lib.watch(viewer, from: 0).makeAsyncIterator()
        let got = try await Lib.untilCurrent(&fromZero)
        #expect(got.map(\.kind) == [.resync, .current])
        #expect(got.first?.version == 5 && got.first?.itemCount == 5)
        // Within the log it still resumes.
        let client = try daemon.client(.viewer)
        defer { client.close() }
        var recent = Lib.watch(client, from: 3).makeAsyncIterator()
        #expect(try await Lib.untilCurrent(&recent).map(\.version) == [4, 5, 5])
        #expect(daemon.stop() == 0)
    }

    // MARK: kill -9

    /// Concurrent writers (two owners) add batches and remove items; earshotd is killed at a
    /// random moment, again and again. After each restart every acknowledged change is there,
    /// every batch and removal is whole or absent, versions only go up, and at the end the file
    /// passes quick_check. EARSHOT_LIBRARY_KILL_CYCLES sets the number of kills (5;
    /// scripts/library-kill-loop.sh runs 200).
    @Test func killedDuringAddsAndRemovesItLosesNoAcknowledgedChange() async throws {
        let cycles = ProcessInfo.processInfo.environment["EARSHOT_LIBRARY_KILL_CYCLES"].flatMap(Int.init) ?? 5
        let settings = ["--session.prepare_on_start=false"]
        let first = try DaemonHarness(settings: settings)
        defer { first.stop() }
        let folder = first.directory, keys = first.clientKeys
        let ledger = KillLedger()
        var daemon = first
        var floors: [String: UInt64] = [:]
        for cycle in 0..<cycles {
            if cycle > 0 {
                daemon = try DaemonHarness(reusing: folder, clientKeys: keys, settings: settings)
                floors = try await ledger.verify(daemon, after: cycle, floors: floors)
            }
            let workers = try (0..<4).map { w in
                try KillWorker(number: w, role: w == 3 ? .viewer : .operator, daemon: daemon, ledger: ledger, cycle: cycle)
            }
            #expect(await Lib.eventually(seconds: 30) { ledger.acknowledged(in: cycle) >= 2 }, "cycle \(cycle): no write was acknowledged")
            try await Task.sleep(for: .milliseconds(Int.random(in: 0...400)))
            daemon.kill9()
            for w in workers { await w.stop() }
            print("library kill cycle \(cycle): \(ledger.summary)")
        }
        let last = try DaemonHarness(reusing: folder, clientKeys: keys, settings: settings)
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
        let daemon = try DaemonHarness(settings: settings)
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

        let damaged = try DaemonHarness(reusing: daemon.directory, clientKeys: keys, settings: settings)
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
            let again = try DaemonHarness(reusing: daemon.directory, clientKeys: keys, settings: settings)
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
            let fresh = try DaemonHarness(reusing: daemon.directory, clientKeys: keys, settings: settings)
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
        let restored = try DaemonHarness(reusing: daemon.directory, clientKeys: keys, settings: settings)
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
        let daemon = try DaemonHarness(settings: settings)
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

        let again = try DaemonHarness(reusing: daemon.directory, clientKeys: daemon.clientKeys, settings: settings)
        defer { again.stop() }
        let viewer = try again.client(.viewer)
        defer { viewer.close() }
        await expectCode(.dataLoss) { () throws(RpcError) in _ = try await viewer.call(Methods.Library.items, Earshot_V1_LibraryItemsRequest()) }
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(try Data(contentsOf: URL(fileURLWithPath: aside)) == before, "the file was not moved whole")
        #expect(again.log.contains("finished moving the damaged database aside"))
        #expect(again.stop() == 0)
    }

    /// With the library turned off, Health says so and a match asked to be kept says why not.
    @Test func aTurnedOffLibrarySaysSo() async throws {
        let daemon = try DaemonHarness(settings: ["--library.enabled=false"])
        defer { daemon.stop() }
        let viewer = try daemon.client(.viewer), op = try daemon.client(.operator)
        defer { [viewer, op].forEach { $0.close() } }
        var check = Earshot_V1_HealthCheckRequest()
        check.service = "earshot.v1.Library"
        let health = try await viewer.call(Methods.Health.check, check)
        #expect(health.status == .notServing && health.message.contains("library.enabled = false"), "\(health)")
        await expectCode(.unimplemented) { () throws(RpcError) in _ = try await viewer.call(Methods.Library.items, Earshot_V1_LibraryItemsRequest()) }
        var request = Earshot_V1_MatchRequest()
        request.addToLibrary = true
        let result = try await op.call(Methods.Recognizer.match, request, timeout: .seconds(60))
        #expect(result.outcome == .match && result.library.code == RpcStatusCode.unavailable.rawValue, "\(result.library)")
        #expect(!FileManager.default.fileExists(atPath: daemon.directory.appendingPathComponent("state/library.db").path))
        #expect(daemon.stop() == 0)
    }

    // MARK: Permissions

    @Test func unwritableLibraryFolderLeavesRecognitionServing() async throws {
        // A library folder only root may write in, and the daemon running as nobody.
        let ro = try Self.rootFolder()
        try Self.makeReadOnly(ro)
        defer { Self.removeFolder(ro) }
        let path = ro.appendingPathComponent("library.db").path
        let daemon = try DaemonHarness(settings: ["--session.prepare_on_start=false", "--library.path=\(path)"], unprivileged: true)
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
        let ro = try Self.rootFolder()
        defer { Self.removeFolder(ro) }
        let path = ro.appendingPathComponent("library.db").path
        let settings = ["--session.prepare_on_start=false", "--library.path=\(path)"]
        let root = try DaemonHarness(settings: settings)
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

        let daemon = try DaemonHarness(reusing: root.directory, clientKeys: root.clientKeys, settings: settings, unprivileged: true)
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

    // MARK: Full

    @Test func belowTheReserveAddsAreRefusedWhileRemovesAndReadsServe() async throws {
        let settings = ["--session.prepare_on_start=false"]
        let daemon = try DaemonHarness(settings: settings)
        defer { daemon.stop() }
        let keys = daemon.clientKeys
        let reply: Earshot_V1_LibraryWriteResponse
        do {
            let viewer = try daemon.client(.viewer)
            defer { viewer.close() }
            reply = try await Lib.add(viewer, [Lib.new(title: "before")])
        }
        #expect(daemon.stop() == 0)
        let attributes = try FileManager.default.attributesOfFileSystem(forPath: daemon.directory.path)
        let free = try #require((attributes[.systemFreeSize] as? NSNumber)?.int64Value)
        let reserve = free * 2 + (1 << 30)
        let full = try DaemonHarness(reusing: daemon.directory, clientKeys: keys, settings: settings + ["--library.reserve_bytes=\(reserve)"])
        defer { full.stop() }
        let viewer = try full.client(.viewer)
        defer { viewer.close() }
        var message = ""
        await expectCode(.resourceExhausted) { () throws(RpcError) in
            do throws(RpcError) { _ = try await Lib.add(viewer, [Lib.new(title: "after")]) } catch { message = error.message; throw error }
        }
        #expect(message.contains("library.reserve_bytes") && message.contains("nothing was changed"), "\(message)")
        let items = try await Lib.all(viewer)
        #expect(items.version == 1 && items.items.map(\.id) == reply.items.map(\.id))
        // Removing is how a full box makes room: it is not refused.
        var remove = Earshot_V1_RemoveLibraryItemsRequest()
        remove.ids = reply.items.map(\.id)
        #expect(try await viewer.call(Methods.Library.remove, remove).itemCount == 0)
        #expect(full.stop() == 0)
    }

    @Test func aFullDatabaseRefusesAddsKeepsWhatItHasAndServes() async throws {
        let daemon = try DaemonHarness(settings: ["--session.prepare_on_start=false", "--library.max_database_mb=1"])
        defer { daemon.stop() }
        let viewer = try daemon.client(.viewer)
        defer { viewer.close() }
        // Items of about 50 KB (random text: nothing compresses), until the 1 MB limit bites.
        func big(_ n: Int) -> Earshot_V1_NewLibraryItem {
            Lib.new(title: "big \(n) " + String((0..<50_000).map { _ in "abcdefghijklmnopqrstuvwxyz0123456789".randomElement()! }))
        }
        var kept: [String: String] = [:]
        var refusal: RpcError?
        for n in 0..<40 where refusal == nil {
            let item = big(n)
            do throws(RpcError) {
                let reply = try await Lib.add(viewer, [item])
                kept[reply.items[0].id] = item.item.mediaItem.title
            } catch {
                refusal = error
            }
        }
        let full = try #require(refusal, "40 items of 50 KB fitted in 1 MB")
        #expect(full.code == .resourceExhausted, "\(full)")
        #expect(full.message.contains("max_database_mb"), "\(full.message)")
        #expect(kept.count >= 10, "only \(kept.count) items before the limit")
        print("library full after \(kept.count) items of 50 KB: \(full.message)")

        // What was acknowledged is intact, and the daemon serves on.
        let all = try await Lib.all(viewer)
        #expect(all.items.count == kept.count && all.version == UInt64(kept.count))
        #expect(all.items.allSatisfy { kept[$0.id] == $0.item.mediaItem.title })
        var check = Earshot_V1_HealthCheckRequest()
        check.service = "earshot.v1.Library"
        #expect(try await viewer.call(Methods.Health.check, check).status == .serving)
        // A removal frees room for another item of the same size.
        var remove = Earshot_V1_RemoveLibraryItemsRequest()
        remove.ids = Array(kept.keys.prefix(2))
        let removed = try await viewer.call(Methods.Library.remove, remove)
        #expect(removed.itemCount == UInt32(kept.count - 2))
        let again = try await Lib.add(viewer, [big(99)])
        #expect(again.itemCount == UInt32(kept.count - 1))
        #expect(daemon.stop() == 0)
        #expect(!daemon.log.contains("damaged"))
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
    /// may read it but not write in it; otherwise `makeReadOnly` makes it so.
    static func rootFolder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("earshot-ro-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o755])
        return folder
    }

    /// Makes `folder` and its files read-only for the unprivileged daemon: files 0644 owned by
    /// root under root (the daemon is nobody), else files 0444 and the folder 0555.
    static func makeReadOnly(_ folder: URL) throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        for name in names { chmod(folder.appendingPathComponent(name).path, DaemonHarness.runningAsRoot ? 0o644 : 0o444) }
        if !DaemonHarness.runningAsRoot { chmod(folder.path, 0o555) }
    }

    /// Removes a folder made by `rootFolder`, read-only or not.
    static func removeFolder(_ folder: URL) {
        chmod(folder.path, 0o755)
        try? FileManager.default.removeItem(at: folder)
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

    /// Polls `condition` every 50 ms for up to `seconds`.
    static func eventually(seconds: Double = 10, _ condition: () async -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            if await condition() { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return await condition()
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

    init(_ daemon: DaemonHarness, _ role: ClientRole, topic: String) throws {
        socket = try ZMQSocket(.sub)
        try socket.set(.linger, 0)
        try daemon.security(role)?.apply(to: socket)
        for t in [topic, Topics.heartbeat] { try socket.set(.subscribe, Array(t.utf8)) }
        try socket.connect(daemon.eventsEndpoint)
        let deadline = ContinuousClock.now + .seconds(15)
        while ContinuousClock.now < deadline, !drain().contains(where: { $0.envelope.topic.hasPrefix(Topics.heartbeat) }) {
            usleep(20_000)
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

    /// The first event (not a heartbeat) that satisfies `condition`, waiting up to 10 s.
    func waitFor(_ condition: (Earshot_V1_EventEnvelope) -> Bool) async -> Event? {
        let deadline = ContinuousClock.now + .seconds(10)
        while true {
            if let found = drain().first(where: { !$0.envelope.topic.hasPrefix(Topics.heartbeat) && condition($0.envelope) }) { return found }
            if ContinuousClock.now >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(20))
        }
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
