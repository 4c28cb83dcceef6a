import EarshotCore
import EarshotTransport
import EarshotWire
import Foundation
import Testing

/// earshotd's catalog folder as an operator finds it: corrupt, foreign and odd files beside the
/// good one, and stops sent while the daemon is still starting.
@Suite("earshotd catalog loading", .serialized)
struct DaemonCatalogLoadingTests {
    /// A daemon started once and stopped, whose state folder the test then changes.
    private func stoppedDaemon() throws -> DaemonHarness {
        let first = try DaemonHarness()
        #expect(first.stop() == 0)
        return first
    }

    private func catalogPath(_ daemon: DaemonHarness, _ name: String) -> String {
        daemon.directory.appendingPathComponent("state/catalogs/\(name)").path
    }

    /// The fixture catalog with one bit flipped in the middle of its values section (which a
    /// structure-only open never reads).
    private static func valuesBitFlipped() -> [UInt8] {
        var bytes = DaemonFixture.shared.catalogBytes
        let values = TestCatalogImage.section(.values, in: bytes)
        bytes[values.lowerBound + values.count / 2] ^= 0x10
        return bytes
    }

    /// What `earshot catalog display` rejects, the daemon leaves out too, and says so: in the
    /// log, in Catalogs/List (state FAILED with the reason), in Describe (FAILED_PRECONDITION)
    /// and on the catalog topic (one event per file). A FIFO is skipped without being opened,
    /// so start-up does not hang on it.
    @Test func failedCatalogsAreListedAndAFIFOIsSkipped() async throws {
        let first = try stoppedDaemon()
        try Data(Self.valuesBitFlipped()).write(to: URL(fileURLWithPath: catalogPath(first, "flip.earcat")))
        try Data(DaemonFixture.shared.catalogBytes + Array("appended".utf8)).write(to: URL(fileURLWithPath: catalogPath(first, "trail.earcat")))
        try Data("these are my notes\n".utf8).write(to: URL(fileURLWithPath: catalogPath(first, "notes.earcat")))
        #expect(mkfifo(catalogPath(first, "x.earcat"), 0o644) == 0)

        let daemon = try DaemonHarness(reusing: first.directory, clientKeys: first.clientKeys)
        #expect(daemon.log.contains("catalog x skipped (never opened)"), "\(daemon.log)")
        let client = try daemon.client()
        defer { client.close() }
        let list = try await client.call(Methods.Catalogs.list, Earshot_V1_ListCatalogsRequest())
        #expect(list.catalogs.map(\.name) == ["flip", "notes", "show", "trail", "x"])
        let byName = Dictionary(uniqueKeysWithValues: list.catalogs.map { ($0.name, $0) })
        let show = try #require(byName["show"])
        #expect(show.state == .active && show.active && show.enabled && show.version == 1 && show.referenceCount == 3 && show.failure.isEmpty)
        let reasons = [
            "flip": "checksum mismatch in section values",
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
        do {
            _ = try await client.call(Methods.Catalogs.describe, describe)
            Issue.record("a catalog that failed to load was described")
        } catch {
            #expect(error.code == .failedPrecondition)
            #expect(error.message.contains("failed to load: checksum mismatch in section values"), "\(error.message)")
        }
        describe.name = "nothing"
        do {
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
        #expect(daemon.stop() == 0)
    }

    /// The configured catalog must be usable: if it fails the check, the daemon refuses to
    /// start and says exactly why.
    @Test func aConfiguredCatalogThatFailsStopsStartUpWithTheReason() throws {
        let first = try stoppedDaemon()
        try Data(Self.valuesBitFlipped()).write(to: URL(fileURLWithPath: catalogPath(first, "flip.earcat")))
        let daemon = try DaemonHarness(reusing: first.directory, clientKeys: first.clientKeys,
                                       settings: ["--session.catalog=flip"], waitUntilListening: false)
        let deadline = Date().addingTimeInterval(30)
        while daemon.process.isRunning, Date() < deadline { usleep(20_000) }
        #expect(daemon.stop() == 1)
        #expect(daemon.log.contains("catalog \"flip\" in \(first.directory.appendingPathComponent("state/catalogs").path) cannot be used: checksum mismatch in section values (file corrupt)"),
                "\(daemon.log)")
    }

    /// SIGTERM while the daemon checks a large catalog (here 6 GB, sparse): it stops within a
    /// second, cleanly, instead of finishing the check (minutes in a debug build) and starting.
    @Test func stopWhileCheckingALargeCatalogIsPrompt() throws {
        let first = try stoppedDaemon()
        try TestCatalogImage.writeSparse(entries: 1_000_000_000, to: catalogPath(first, "big.earcat"))
        let daemon = try DaemonHarness(reusing: first.directory, clientKeys: first.clientKeys, waitUntilListening: false)
        let deadline = Date().addingTimeInterval(30)
        while !daemon.log.contains("checking catalog big"), daemon.process.isRunning, Date() < deadline { usleep(5_000) }
        usleep(300_000)
        #expect(daemon.process.isRunning, "\(daemon.log)")
        kill(daemon.process.processIdentifier, SIGTERM)
        let signalled = Date()
        while daemon.process.isRunning, Date().timeIntervalSince(signalled) < 30 { usleep(5_000) }
        let took = Date().timeIntervalSince(signalled)
        #expect(took < 1, "took \(took) s to stop: \(daemon.log)")
        #expect(daemon.stop() == 0)
        #expect(daemon.log.contains("signal SIGTERM: shutting down"))
        #expect(daemon.log.contains("stopped during start-up"), "\(daemon.log)")
        #expect(!daemon.log.contains("listening on"), "\(daemon.log)")
    }

    /// SIGTERM at random moments of a first start (making the key pair, loading catalogs,
    /// binding, the security self-test): every time the process exits 0 within a second, and
    /// the key pair is absent or whole, never torn; no temporary file is left behind.
    @Test func stopAtAnyPointOfStartUpIsPromptAndClean() throws {
        let first = try stoppedDaemon()
        let state = first.directory.appendingPathComponent("state")
        let keyPath = state.appendingPathComponent("server.key").path
        for cycle in 0..<10 {
            if cycle % 2 == 0 {
                try? FileManager.default.removeItem(atPath: keyPath)
                try? FileManager.default.removeItem(atPath: state.appendingPathComponent("server.public").path)
            }
            let daemon = try DaemonHarness(reusing: first.directory, clientKeys: first.clientKeys, waitUntilListening: false)
            usleep(UInt32.random(in: 0...120_000))
            kill(daemon.process.processIdentifier, SIGTERM)
            let signalled = Date()
            while daemon.process.isRunning, Date().timeIntervalSince(signalled) < 30 { usleep(5_000) }
            let took = Date().timeIntervalSince(signalled)
            #expect(took < 1, "cycle \(cycle): took \(took) s to stop: \(daemon.log)")
            #expect(daemon.stop() == 0, "cycle \(cycle): \(daemon.log)")
            if FileManager.default.fileExists(atPath: keyPath) {
                #expect(throws: Never.self, "cycle \(cycle): a stopped start left a broken key") { try CurveKeyFile.readKeyPair(keyPath) }
            }
            for folder in [state, state.appendingPathComponent("catalogs")] {
                let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
                #expect(!names.contains { $0.contains(".tmp-") }, "cycle \(cycle): left \(names)")
            }
        }
        // And it still starts and serves.
        let daemon = try DaemonHarness(reusing: first.directory, clientKeys: first.clientKeys)
        #expect(daemon.stop() == 0)
    }
}

/// Hand-made `.earcat` images for tests that need what the writer never makes.
enum TestCatalogImage {
    static func load<T: FixedWidthInteger>(_ bytes: [UInt8], _ at: Int, _: T.Type) -> T {
        bytes[at..<(at + MemoryLayout<T>.size)].reversed().reduce(0) { $0 << 8 | T($1) }
    }

    enum Kind: UInt32 { case references = 1, directory, keyLow, values, peaks, metadata }

    /// Where section `kind` lies, from the section table.
    static func section(_ kind: Kind, in bytes: [UInt8]) -> Range<Int> {
        let entry = (0..<6).map { 96 + 32 * $0 }.first { load(bytes, $0, UInt32.self) == kind.rawValue }!
        let offset = Int(load(bytes, entry + 8, UInt64.self)), length = Int(load(bytes, entry + 16, UInt64.self))
        return offset..<(offset + length)
    }

    /// A catalog with no references and `entries` postings whose header and section table are
    /// valid, written as a sparse file (nothing but the header is stored): the structure checks
    /// pass, and the full check reads gigabytes of zeros before it finds the index checksum wrong.
    static func writeSparse(entries: Int, to path: String) throws {
        var out: [UInt8] = Array("EARCAT".utf8) + [0, 1]
        func put<T: FixedWidthInteger>(_ v: T) { withUnsafeBytes(of: v.littleEndian) { out.append(contentsOf: $0) } }
        put(UInt16(1)); put(UInt16(96)); put(UInt16(6)); put(UInt16(0))
        put(UInt32(16_000)); put(UInt16(1024)); put(UInt16(128))
        let bits = 22
        put(UInt32(bits)); put(UInt32(0)); put(UInt64(entries)); put(UInt64(0))
        put((1.0).bitPattern); put((12.0).bitPattern)
        out += [UInt8](repeating: 0, count: 92 - out.count)
        let directoryBytes = ((1 << bits) + 1) * 4
        let sizes: [(Kind, Int, UInt32)] = [
            (.references, 0, 0), (.directory, directoryBytes, CRC32.checksum([UInt8](repeating: 0, count: directoryBytes))),
            (.keyLow, entries * 2, 1), (.values, entries * 4, 1), (.peaks, 0, 0), (.metadata, 0, 0),
        ]
        var table: [UInt8] = []
        var offset = 96 + 6 * 32
        for (kind, length, crc) in sizes {
            offset = (offset + 15) / 16 * 16
            for v in [UInt64(kind.rawValue) | 0, UInt64(offset), UInt64(length), UInt64(crc)] {
                withUnsafeBytes(of: v.littleEndian) { table.append(contentsOf: $0) }
            }
            offset += length
        }
        // Entries are (u32 kind, u32 flags, u64 offset, u64 length, u32 crc, u32 reserved):
        // the loop above wrote kind+flags as one u64 and crc+reserved as one u64.
        let headerCRC = table.withUnsafeBytes { t in
            out.withUnsafeBytes { h in CRC32.checksum(t, continuing: CRC32.checksum(h)) }
        }
        put(headerCRC)
        try Data(out + table).write(to: URL(fileURLWithPath: path))
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.truncate(atOffset: UInt64(offset))
        try handle.close()
    }
}
