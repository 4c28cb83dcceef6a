import EarshotCrypto
import EarshotStore
import EarshotSync
import EarshotTestSupport
import EarshotTransport
import EarshotWire
import Foundation
import Testing

extension InProcessDaemonTests {
    /// The Library service through the daemon over real CURVE: each key's library, private to it;
    /// notices without contents; resumable watches; a full database or disk. (kill -9 during
    /// writes, a damaged database found at start, and files the daemon's user may not write are
    /// `DaemonLibraryTests`'.)
    @Suite("earshotd library service", .serialized)
    struct DaemonLibraryServiceTests {
        @Test func addItemsRemoveAndMatchIntoTheLibraryOverCurve() async throws {
            try await InProcessDaemon.with { daemon in
                let op = try daemon.client(.operator)
                defer { op.close() }
                let matches = try await RawSubscriber(daemon, .operator, topic: Topics.match)

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

                let copy = try await matches.waitFor("the result is published on match/") {
                    $0.match.madeAtUnixMs == added.madeAtUnixMs && $0.match.outcome == .match
                }
                #expect(!copy.envelope.match.hasLibrary, "the published copy carries the caller's library status")
                #expect(copy.envelope.match.items == added.items)
                await daemon.stop()
            }
        }

        @Test func ownersAreIsolatedAndAdminsManageThem() async throws {
            try await InProcessDaemon.with(settings: ["--session.prepare_on_start=false"]) { daemon in
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
                try await eventually("ListOwners says viewer is no longer allowed") { (try? await Lib.owners(admin))?["viewer"]?.allowed == false }
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
                await daemon.stop()
            }
        }

        @Test func noticesNameTheOwnerByHashAndCarryNoContents() async throws {
            try await InProcessDaemon.with(settings: ["--session.prepare_on_start=false"]) { daemon in
                let viewer = try daemon.client(.viewer)
                defer { viewer.close() }
                let notices = try await RawSubscriber(daemon, .admin, topic: Topics.library)
                let secret = "Secret Title \(UUID().uuidString)"
                let reply = try await Lib.add(viewer, [Lib.new(title: secret, properties: #"{"note": "\#(secret)"}"#), Lib.new(title: secret + " 2")])

                let heard = try await notices.waitFor("a notice on library/") { $0.library.version == reply.version }
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
                let removal = try await notices.waitFor("a notice for the removal") { $0.library.version == 2 }
                #expect(removal.envelope.library.kind == .removed && removal.envelope.library.changed == 1 && removal.envelope.library.itemCount == 1)
                #expect(!removal.frames.flatMap { $0 }.contains(subsequence: Array(reply.items[0].id.utf8)))
                await daemon.stop()
            }
        }

        @Test func watchResumesAfterADisconnectWithoutGapsOrRepeats() async throws {
            try await InProcessDaemon.with(settings: ["--session.prepare_on_start=false"]) { daemon in
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
                await daemon.stop()
            }
        }

        @Test func watchFromBeyondAShortChangeLogResyncs() async throws {
            try await InProcessDaemon.with(settings: ["--session.prepare_on_start=false", "--library.change_log_length=2"]) { daemon in
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
                await daemon.stop()
            }
        }

        /// With the library turned off, Health says so and a match asked to be kept says why not.
        @Test func aTurnedOffLibrarySaysSo() async throws {
            try await InProcessDaemon.with(settings: ["--library.enabled=false"]) { daemon in
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
                await daemon.stop()
            }
        }

        @Test func belowTheReserveAddsAreRefusedWhileRemovesAndReadsServe() async throws {
            let settings = ["--session.prepare_on_start=false"]
            let folder = try DaemonFolder()
            let reply = try await InProcessDaemon.with(folder, settings: settings) { daemon in
                let viewer = try daemon.client(.viewer)
                defer { viewer.close() }
                return try await Lib.add(viewer, [Lib.new(title: "before")])
            }
            let attributes = try FileManager.default.attributesOfFileSystem(forPath: folder.url.path)
            let free = try #require((attributes[.systemFreeSize] as? NSNumber)?.int64Value)
            let reserve = free * 2 + (1 << 30)
            try await InProcessDaemon.with(folder, settings: settings + ["--library.reserve_bytes=\(reserve)"]) { full in
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
            }
        }

        @Test func aFullDatabaseRefusesAddsKeepsWhatItHasAndServes() async throws {
            try await InProcessDaemon.with(settings: ["--session.prepare_on_start=false", "--library.max_database_mb=1"]) { daemon in
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
                await daemon.stop()
                #expect(!daemon.log.contains("damaged"))
            }
        }
    }
}
