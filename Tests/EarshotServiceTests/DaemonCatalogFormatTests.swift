import EarshotCrypto
import EarshotTestSupport
import EarshotTransport
import EarshotWire
import Foundation
import Testing

@testable import EarshotCore

extension InProcessDaemonTests {
    /// A catalog an earlier release wrote (file format 1) in earshotd's folder.
    @Suite("earshotd catalog formats", .serialized)
    struct DaemonCatalogFormatTests {
        /// It serves and matches as it is; the log and Catalogs/List name its format and say how
        /// to upgrade it; the upgraded file, renamed into the folder, replaces it and the notice goes.
        @Test func anEarlierFormatServesAndSaysHowToUpgrade() async throws {
            let folder = try DaemonFolder()
            let catalog = try CustomCatalog(dataRepresentation: DaemonFixture.shared.catalogBytes)
            try folder.scratch.write("state/catalogs/show.earcat", try CatalogWriter.encode(catalog, version: 1))
            let path = folder.scratch.path("state/catalogs/show.earcat")

            try await InProcessDaemon.with(folder, settings: ["--session.follow=false"]) { daemon in
                #expect(daemon.log.contains("catalog show: file format 1, from an earlier release: matched as it is; `earshot catalog upgrade \(path)`"),
                        "\(daemon.log)")
                let client = try daemon.client()
                defer { client.close() }
                let listed = try await client.call(Methods.Catalogs.list, Earshot_V1_ListCatalogsRequest()).catalogs
                let old = try #require(listed.first)
                #expect(listed.count == 1 && old.state == .active && old.formatVersion == 1 && old.failure.isEmpty)
                #expect(old.notice.contains("file format 1") && old.notice.contains("earshot catalog upgrade \(path)"), "\(old.notice)")

                let result = try await client.call(Methods.Recognizer.match, Earshot_V1_MatchRequest(), timeout: .seconds(60))
                #expect(result.outcome == .match)
                #expect(result.items.first?.mediaItem.id == "piece1")
                #expect(result.items.first?.catalog == "show")

                // What `earshot catalog upgrade` does: the file rewritten beside it and renamed over it.
                let upgraded = try catalog.dataRepresentation()
                try folder.scratch.write("state/catalogs/show.upgrade-tmp", upgraded)
                #expect(rename(folder.scratch.path("state/catalogs/show.upgrade-tmp"), path) == 0)
                let current = try await eventually("the upgraded file serves", every: .milliseconds(20), {
                    try await client.call(Methods.Catalogs.list, Earshot_V1_ListCatalogsRequest()).catalogs.first
                }, until: { $0?.formatVersion == 2 })
                #expect(current?.version == 2 && current?.notice == "" && current?.state == .active)
                let again = try await client.call(Methods.Recognizer.match, Earshot_V1_MatchRequest(), timeout: .seconds(60))
                #expect(again.items.first?.mediaItem.id == "piece1")
            }
        }

        /// A signed catalog of the earlier format on a box that accepts only its author: it
        /// serves, and the notice asks for the author's key, which signs the upgrade again.
        @Test func aSignedEarlierFormatIsToldToBeSignedAgain() async throws {
            let author = Ed25519.SigningKey()
            let folder = try DaemonFolder()
            let authors = try folder.scratch.write("authors", text: "\(Z85.encode(author.publicKey)) studio\n")
            let catalog = try CustomCatalog(dataRepresentation: DaemonFixture.shared.catalogBytes)
            let format1 = try CatalogWriter.encode(catalog, version: 1)
            try folder.scratch.write("state/catalogs/show.earcat", CatalogUpload.signed(format1, by: author))
            let path = folder.scratch.path("state/catalogs/show.earcat")
            try await InProcessDaemon.with(folder, settings: ["--catalogs.trusted_authors=\(authors)"]) { daemon in
                let client = try daemon.client()
                defer { client.close() }
                let show = try #require(try await client.call(Methods.Catalogs.list, Earshot_V1_ListCatalogsRequest()).catalogs.first)
                #expect(show.state == .active && show.formatVersion == 1 && show.signerName == "studio")
                #expect(show.notice.contains("`earshot catalog upgrade --key AUTHOR.author.key \(path)`"), "\(show.notice)")
            }
        }
    }
}
