import EarshotCore
import EarshotCrypto
import EarshotTestSupport
import EarshotTransport
import EarshotWire
import Foundation
import Testing

extension InProcessDaemonTests {
    /// Names with a NUL or another control character, as a hostile client sends them, through the
    /// daemon over CURVE: refused wherever a name is accepted, never cut short on the way to
    /// SQLite (where "viewer\0x" would be "viewer"), and never written raw into the log.
    @Suite("earshotd hostile names", .serialized)
    struct DaemonHostileNamesTests {
        static let hostile = ["viewer\u{0}x", "viewer\u{0}", "viewer\u{1B}[2J", "viewer\nforged log line", "viewer\u{85}"]

        @Test func namesWithControlCharactersAreRefusedAndReachNoOtherOwner() async throws {
            try await InProcessDaemon.with { daemon in
                let viewer = try daemon.client(.viewer)
                defer { viewer.close() }
                let admin = try daemon.client(.admin)
                defer { admin.close() }
                let added = try await Lib.add(viewer, [Lib.new(title: "one"), Lib.new(title: "two"), Lib.new(title: "three")])
                #expect(added.itemCount == 3)

                for name in Self.hostile {
                    var delete = Earshot_V1_DeleteLibraryOwnerRequest()
                    delete.owner = name
                    await expectCode(.invalidArgument) { () throws(RpcError) in _ = try await admin.call(Methods.Library.deleteOwner, delete) }
                    var items = Earshot_V1_LibraryItemsRequest()
                    items.owner = name
                    await expectCode(.invalidArgument) { () throws(RpcError) in _ = try await admin.call(Methods.Library.items, items) }
                    var byCatalog = Earshot_V1_LibraryItemsRequest()
                    byCatalog.catalog = "show" + name.dropFirst("viewer".count)
                    await expectCode(.invalidArgument) { () throws(RpcError) in _ = try await viewer.call(Methods.Library.items, byCatalog) }
                }
                // The viewer's library is whole, and a filter that differs after a NUL matches nothing.
                let pages = try await Lib.pages(admin, owner: "viewer")
                #expect(pages.flatMap(\.items).count == 3)

                // Catalog names, cue ids and upload names.
                for name in ["show\u{0}", "show\u{0}x", "sh\u{7}ow"] {
                    var describe = Earshot_V1_DescribeCatalogRequest()
                    describe.name = name
                    await expectCode(.invalidArgument) { () throws(RpcError) in _ = try await admin.call(Methods.Catalogs.describe, describe) }
                    var remove = Earshot_V1_CatalogNameRequest()
                    remove.name = name
                    await expectCode(.invalidArgument) { () throws(RpcError) in _ = try await admin.call(Methods.Catalogs.remove, remove) }
                    var begin = Earshot_V1_BeginUploadRequest()
                    begin.name = name
                    begin.size = 1000
                    begin.sha256 = Data(repeating: 1, count: 32)
                    await expectCode(.invalidArgument) { () throws(RpcError) in _ = try await admin.call(Methods.Catalogs.beginUpload, begin) }
                    var schedule = Earshot_V1_CueScheduleRequest()
                    schedule.catalog = name
                    await expectCode(.invalidArgument) { () throws(RpcError) in _ = try await viewer.call(Methods.Cues.getSchedule, schedule) }
                }
                let list = try await admin.call(Methods.Catalogs.list, Earshot_V1_ListCatalogsRequest())
                #expect(list.catalogs.map(\.name) == ["show"], "the catalog is still installed")
                let op = try daemon.client(.operator)
                defer { op.close() }
                for id in ["q\u{0}1", "q\u{1}", "q\n2"] {
                    var set = Earshot_V1_SetCuesRequest()
                    set.reference.catalog = "show"
                    var cue = Earshot_V1_Cue()
                    cue.id = id
                    cue.start = 1
                    set.cues = [cue]
                    await expectCode(.invalidArgument) { () throws(RpcError) in _ = try await op.call(Methods.Cues.setCues, set) }
                }
                var current = Earshot_V1_CueScheduleRequest()
                current.catalog = "show"
                #expect(try await viewer.call(Methods.Cues.getSchedule, current).source == .catalog, "no cue set was kept")

                // The refusals were logged with their names escaped: no raw control character but the
                // line ends.
                let log = Array(daemon.log.utf8)
                #expect(!log.contains { ($0 < 0x20 && $0 != 0x0A) || $0 == 0x7F }, "a control character reached the log")
                #expect(!daemon.log.contains("\u{85}"))
            }
        }

        @Test func anAllowListNameWithAControlCharacterIsRefusedAndTheListInForceStays() async throws {
            try await InProcessDaemon.with { daemon in
                let before = try String(contentsOf: daemon.allowListURL, encoding: .utf8)
                let intruder = try CurveKeyPair.generate()
                try (before + "\(intruder.publicKey) viewer\u{1}x viewer\n").write(to: daemon.allowListURL, atomically: true, encoding: .utf8)
                _ = try await eventually("the refusal is logged", within: .seconds(15), { daemon.log }) {
                    $0.contains("allow-list not re-read") && $0.contains("control character")
                }
                // The list in force is the one before: the viewer is still admitted, the intruder is not.
                let viewer = try daemon.client(.viewer)
                defer { viewer.close() }
                _ = try await viewer.call(Methods.Library.items, Earshot_V1_LibraryItemsRequest())
                var configuration = RpcClient.Configuration()
                configuration.security = ClientSecurity(serverPublicKey: try #require(daemon.security()?.serverPublicKey), keyPair: intruder)
                let stranger = try RpcClient(endpoint: daemon.rpcEndpoint, configuration: configuration)
                defer { stranger.close() }
                await expectCode(.unauthenticated) { () throws(RpcError) in try await stranger.ping(timeout: .milliseconds(1500)) }
            }
        }
    }
}
