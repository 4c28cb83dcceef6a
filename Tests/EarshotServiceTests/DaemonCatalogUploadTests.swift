import EarshotCore
import EarshotCrypto
import EarshotSync
import EarshotStore
import EarshotTestSupport
import EarshotTransport
import EarshotWire
import Foundation
import Testing

/// Catalog hot-load over the network, driving a real earshotd process over real CURVE sockets:
/// what only a process shows — an upload resumed after the daemon was killed, the mappings and
/// descriptors a swap leaves, kill -9 at any point. (The rest of the catalogs' logic is
/// `InProcessDaemonTests.DaemonCatalogTests`'.)
@Suite("earshotd catalog upload", .serialized)
struct DaemonCatalogUploadTests {
    // MARK: Upload protocol

    /// A client killed mid-upload and a daemon killed mid-upload (kill -9) both resume from the
    /// last acknowledged offset: begin again finds the upload with the offset held, and the
    /// catalog that results is whole and matches.
    @Test func resumesAfterTheClientAndTheDaemonAreKilled() async throws {
        let bytes = CatalogUpload.programmeCatalog
        #expect(bytes.count > 3 * CatalogUpload.chunk)
        let first = try await DaemonHarness()
        var client = try first.client()
        let status = try await CatalogUpload.begin(client, "programme", bytes)
        #expect(status.offset == 0 && !status.resumed)
        _ = try await CatalogUpload.send(client, status.uploadID, bytes, at: 0, count: CatalogUpload.chunk)
        _ = try await CatalogUpload.send(client, status.uploadID, bytes, at: CatalogUpload.chunk, count: CatalogUpload.chunk)
        client.close()  // the client goes away without a word

        client = try first.client()
        let resumed = try await CatalogUpload.begin(client, "programme", bytes)
        #expect(resumed.resumed && resumed.uploadID == status.uploadID && resumed.offset == UInt64(2 * CatalogUpload.chunk))
        _ = try await CatalogUpload.send(client, status.uploadID, bytes, at: 2 * CatalogUpload.chunk, count: CatalogUpload.chunk)
        client.close()
        first.kill9()

        let second = try await DaemonHarness(reusing: first.directory, clientKeys: first.clientKeys)
        defer { second.stop() }
        client = try second.client()
        defer { client.close() }
        let afterCrash = try await CatalogUpload.begin(client, "programme", bytes)
        #expect(afterCrash.resumed && afterCrash.offset == UInt64(3 * CatalogUpload.chunk), "\(afterCrash)")
        // The catalog is never visible before its commit.
        #expect(try await CatalogUpload.list(client)["programme"] == nil)
        var held = Int(afterCrash.offset)
        while held < bytes.count { held = Int(try await CatalogUpload.send(client, afterCrash.uploadID, bytes, at: held, count: CatalogUpload.chunk).offset) }
        let done = try await CatalogUpload.commit(client, afterCrash.uploadID)
        #expect(done.catalog.name == "programme" && done.catalog.version == 1 && !done.replaced && done.catalog.state == .active)
        #expect(done.catalog.sha256 == SHA256.hex(bytes.withUnsafeBytes { SHA256.hash($0) }))
        #expect(CatalogUpload.files(second)["programme.earcat"] == bytes)
        // The committed upload is gone: its id is unknown now.
        var ask = Earshot_V1_UploadRequest()
        ask.uploadID = status.uploadID
        await expectCode(.notFound) { () throws(RpcError) in _ = try await client.call(Methods.Catalogs.getUpload, ask) }
        // Matches search it, and say so.
        _ = try await client.call(Methods.Catalogs.disable, { var r = Earshot_V1_CatalogNameRequest(); r.name = "show"; return r }())
        let result = try await client.call(Methods.Recognizer.match, Earshot_V1_MatchRequest())
        #expect(result.outcome == .match && result.items.first?.catalog == "programme" && result.items.first?.catalogVersion == 1, "\(result)")
    }


    // MARK: Swaps while matching

    /// Replacing, disabling and removing catalogs while clients call Match back to back: no
    /// Match fails with an RPC error, versions count up, each result names its catalog and
    /// version, removing an unknown name is NOT_FOUND, and the daemon's mappings and
    /// descriptors return to where they were.
    @Test func swapsWhileMatching() async throws {
        let daemon = try await DaemonHarness()
        defer { daemon.stop() }
        let client = try daemon.client()
        defer { client.close() }
        _ = try await client.call(Methods.Recognizer.match, Earshot_V1_MatchRequest())  // warm: window full
        let mappingsBefore = Self.catalogMappings(daemon)
        #expect(mappingsBefore.count == 1, "one catalog serves: \(mappingsBefore); \(Self.mappedFiles(daemon))")
        let descriptorsBefore = daemon.openDescriptors

        let failures = Locked<[String]>([])
        let answered = Locked(0)
        let stop = Locked(false)
        let matchers = (0..<3).map { _ in
            Task {
                guard let c = try? daemon.client(.operator) else { return 0 }
                defer { c.close() }
                var n = 0
                while !stop.withLock({ $0 }) {
                    do throws(RpcError) {
                        let r = try await c.call(Methods.Recognizer.match, Earshot_V1_MatchRequest())
                        if r.outcome == .match, r.items.contains(where: { $0.catalog.isEmpty || $0.catalogVersion == 0 }) {
                            failures.withLock { $0.append("unlabelled item: \(r)") }
                        }
                        n += 1
                        answered.withLock { $0 += 1 }
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
                return n
            }
        }
        for round in 1...6 {
            let reply = try await CatalogUpload.push(client, "show", round.isMultiple(of: 2) ? DaemonFixture.shared.catalogBytes : CatalogUpload.programmeCatalog)
            #expect(reply.replaced && reply.catalog.version == UInt64(round + 1))
        }
        _ = try await CatalogUpload.push(client, "extra", CatalogUpload.otherCatalog)
        var name = Earshot_V1_CatalogNameRequest()
        name.name = "extra"
        #expect(try await client.call(Methods.Catalogs.disable, name).state == .disabled)
        #expect(try await client.call(Methods.Catalogs.enable, name).state == .active)
        #expect(try await client.call(Methods.Catalogs.remove, name).removed.name == "extra")
        await expectCode(.notFound) { () throws(RpcError) in _ = try await client.call(Methods.Catalogs.remove, name) }
        name.name = "nothing"
        await expectCode(.notFound) { () throws(RpcError) in _ = try await client.call(Methods.Catalogs.enable, name) }
        // Every matcher calls on the catalogs as the changes left them.
        let afterChanges = answered.withLock { $0 }
        try await eventually("matches answer after the last change") { answered.withLock { $0 } >= afterChanges + 3 }
        stop.withLock { $0 = true }
        var total = 0
        for m in matchers { total += await m.value }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        #expect(total > 10)
        let result = try await client.call(Methods.Recognizer.match, Earshot_V1_MatchRequest())
        #expect(result.items.first?.catalog == "show" && result.items.first?.catalogVersion == 7, "\(result)")
        // The removed and replaced versions were unmapped; no descriptor was left open.
        let mappingsAfter = await Self.catalogMappings(daemon, settlingOn: mappingsBefore.count)
        #expect(mappingsAfter.count == mappingsBefore.count, "mappings: \(mappingsAfter) vs \(mappingsBefore); \(Self.mappedFiles(daemon))")
        #expect(daemon.openDescriptors <= descriptorsBefore + 2, "descriptors: \(daemon.openDescriptors) vs \(descriptorsBefore)")
        #expect(CatalogUpload.files(daemon).keys.sorted() == ["show.earcat"])

        // Removing the enabled catalog while matches run: matches answer an error result, not a crash.
        name.name = "show"
        _ = try await client.call(Methods.Catalogs.remove, name)
        let none = try await client.call(Methods.Recognizer.match, Earshot_V1_MatchRequest())
        #expect(none.outcome == .error && none.error.message.contains("no catalog is enabled"), "\(none)")
        let mappingsLeft = await Self.catalogMappings(daemon, settlingOn: 0)
        #expect(mappingsLeft.isEmpty, "\(mappingsLeft)")
    }

    /// The lines of /proc/PID/maps that map a catalog file (installed, replaced or an upload).
    static func catalogMappings(_ daemon: DaemonHarness) -> [String] {
        let maps = ProcFile.text("/proc/\(daemon.process.processIdentifier)/maps") ?? ""
        return maps.split(separator: "\n").filter { $0.hasSuffix(".earcat") || $0.contains(".earcat (deleted)") || $0.hasSuffix(".part") }.map(String.init)
    }

    /// Every file the daemon maps, for a failure's message.
    static func mappedFiles(_ daemon: DaemonHarness) -> String {
        let path = "/proc/\(daemon.process.processIdentifier)/maps"
        guard let maps = ProcFile.text(path) else { return "\(path) unreadable" }
        let lines = maps.split(separator: "\n")
        let files = Set(lines.compactMap { line in line.firstIndex(of: "/").map { String(line[$0...]) } })
        return "\(lines.count) lines in \(path), files: \(files.sorted())"
    }

    /// The catalog mappings once they number `expected`, or after 3 s what they are: a catalog
    /// swapped out is unmapped when the last match on it lets go.
    static func catalogMappings(_ daemon: DaemonHarness, settlingOn expected: Int) async -> [String] {
        _ = try? await eventually("\(expected) catalog mappings", within: .seconds(3)) { catalogMappings(daemon).count == expected }
        return catalogMappings(daemon)
    }

    // MARK: kill -9 anywhere

    /// kill -9 at random moments of uploads, commits and swaps: after every restart the catalogs
    /// folder holds only whole catalogs that verify, the daemon serves (List, Match) and an
    /// interrupted push completes. `EARSHOT_KILL_LOOPS` sets the rounds (scripts/kill-loop.sh
    /// runs many; the test command a few).
    @Test func killedAtAnyPointOfUploadAndSwap() async throws {
        let rounds = Int(ProcessInfo.processInfo.environment["EARSHOT_KILL_LOOPS"] ?? "") ?? 4
        let first = try await DaemonHarness()
        #expect(first.stop() == 0)
        let versions = [CatalogUpload.programmeCatalog, DaemonFixture.shared.catalogBytes, CatalogUpload.otherCatalog]
        var random = SeededRandom(seed: 13)
        for round in 0..<rounds {
            let daemon = try await DaemonHarness(reusing: first.directory, clientKeys: first.clientKeys)
            let client = try daemon.client()
            // Pushes back to back, killed after a random delay.
            let pushing = Task {
                var i = round
                while !Task.isCancelled {
                    _ = try? await CatalogUpload.push(client, i.isMultiple(of: 2) ? "show" : "extra", versions[i % versions.count])
                    i += 1
                }
            }
            try await Task.sleep(for: .milliseconds(Int(random.next() % 400) + 20))
            daemon.kill9()
            pushing.cancel()
            client.close()
            _ = await pushing.value

            let restarted = try await DaemonHarness(reusing: first.directory, clientKeys: first.clientKeys)
            let folder = restarted.directory.appendingPathComponent("state/catalogs")
            for file in try FileManager.default.contentsOfDirectory(atPath: folder.path) {
                #expect(file.hasSuffix(".earcat") && !file.hasPrefix("."), "round \(round): stray file \(file)")
                let bytes = try Data(contentsOf: folder.appendingPathComponent(file))
                #expect(versions.contains(Array(bytes)), "round \(round): \(file) is not one whole version")
            }
            let c = try restarted.client()
            let catalogs = try await CatalogUpload.list(c)
            #expect(catalogs.values.allSatisfy { $0.state == .active }, "round \(round): \(catalogs)")
            // A match waits for audio the restarted daemon has yet to hear (in a debug build, on
            // cores other daemons share): it must answer, not within the default 10 s.
            let result = try await c.call(Methods.Recognizer.match, Earshot_V1_MatchRequest(), timeout: .seconds(30))
            #expect(result.outcome != .error || result.error.message.contains("no catalog"), "round \(round): \(result)")
            // An interrupted upload finishes.
            #expect(try await CatalogUpload.push(c, "show", CatalogUpload.programmeCatalog).catalog.state == .active)
            c.close()
            #expect(restarted.stop() == 0, "round \(round)")
        }
    }
}
