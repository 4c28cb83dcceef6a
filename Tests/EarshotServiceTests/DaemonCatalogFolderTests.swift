import EarshotCore
import EarshotTestSupport
import EarshotTransport
import EarshotWire
import Foundation
import Testing

extension InProcessDaemonTests {
    /// earshotd's catalog folder as an operator finds it: corrupt, foreign and odd files beside
    /// the good one.
    @Suite("earshotd catalog folder", .serialized)
    struct DaemonCatalogFolderTests {
        /// What `earshot catalog display` rejects, the daemon leaves out too, and says so: in the
        /// log, in Catalogs/List (state FAILED with the reason), in Describe (FAILED_PRECONDITION)
        /// and on the catalog topic (one event per file). A FIFO is skipped without being opened,
        /// so start-up does not hang on it.
        @Test func failedCatalogsAreListedAndAFIFOIsSkipped() async throws {
            let folder = try DaemonFolder()
            let catalogs = folder.scratch
            try catalogs.write("state/catalogs/flip.earcat", DaemonCatalogLoadingTests.postingsBitFlipped())
            try catalogs.write("state/catalogs/trail.earcat", DaemonFixture.shared.catalogBytes + Array("appended".utf8))
            try catalogs.write("state/catalogs/notes.earcat", text: "these are my notes\n")
            #expect(mkfifo(catalogs.path("state/catalogs/x.earcat"), 0o644) == 0)

            try await InProcessDaemon.with(folder) { daemon in
                #expect(daemon.log.contains("catalog x skipped (never opened)"), "\(daemon.log)")
                let client = try daemon.client()
                defer { client.close() }
                let list = try await client.call(Methods.Catalogs.list, Earshot_V1_ListCatalogsRequest())
                #expect(list.catalogs.map(\.name) == ["flip", "notes", "show", "trail", "x"])
                let byName = Dictionary(uniqueKeysWithValues: list.catalogs.map { ($0.name, $0) })
                let show = try #require(byName["show"])
                #expect(show.state == .active && show.active && show.enabled && show.version == 1 && show.referenceCount == 3 && show.failure.isEmpty)
                let reasons = [
                    "flip": "checksum mismatch in section postings",
                    "trail": "8 unexpected bytes after the last section",
                    "notes": "not an Earshot catalog",
                    "x": "is a named pipe, not a regular file",
                ]
                for (name, reason) in reasons {
                    let summary = try #require(byName[name])
                    #expect(summary.state == .failed, "\(name)")
                    #expect(summary.failure.contains(reason), "\(name): \(summary.failure)")
                    #expect(!summary.failure.contains("/"), "the reason names no path: \(summary.failure)")
                    #expect(!summary.active && summary.referenceCount == 0 && summary.byteCount == 0)
                }

                var describe = Earshot_V1_DescribeCatalogRequest()
                describe.name = "flip"
                do throws(RpcError) {
                    _ = try await client.call(Methods.Catalogs.describe, describe)
                    Issue.record("a catalog that failed to load was described")
                } catch {
                    #expect(error.code == .failedPrecondition)
                    #expect(error.message.contains("failed to load: checksum mismatch in section postings"), "\(error.message)")
                }
                describe.name = "nothing"
                do throws(RpcError) {
                    _ = try await client.call(Methods.Catalogs.describe, describe)
                    Issue.record("an unknown catalog was described")
                } catch {
                    #expect(error.code == .notFound)
                }

                // One catalog event per file at start: one LOADED, four FAILED. They are published before
                // anyone can subscribe; the heartbeat's head for the topic counts them.
                let subscriber = try EventSubscriber(endpoint: daemon.eventsEndpoint, topics: [Topics.heartbeat], security: daemon.security(.viewer))
                defer { subscriber.close() }
                var catalogEvents: UInt64?
                for await event in subscriber.events {
                    if case .heartbeat(let hb) = event.body {
                        catalogEvents = hb.heads[Topics.catalog]
                        break
                    }
                }
                #expect(catalogEvents == 5)
            }
        }
    }
}
