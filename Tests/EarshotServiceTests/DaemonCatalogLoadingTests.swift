import EarshotCore
import EarshotTransport
import EarshotWire
import EarshotTestSupport
import Foundation
import Testing

/// earshotd's catalog folder as a process finds it at start: a configured catalog that fails stops
/// the start, and stops sent while the daemon is still starting are prompt. (What it makes of
/// corrupt, foreign and odd files beside the good one is
/// `InProcessDaemonTests.DaemonCatalogFolderTests`'.)
@Suite("earshotd catalog loading", .serialized)
struct DaemonCatalogLoadingTests {
    /// A daemon started once and stopped, whose state folder the test then changes.
    private func stoppedDaemon() async throws -> DaemonHarness {
        let first = try await DaemonHarness()
        #expect(first.stop() == 0)
        return first
    }

    private func catalogPath(_ daemon: DaemonHarness, _ name: String) -> String {
        daemon.directory.appendingPathComponent("state/catalogs/\(name)").path
    }

    /// The fixture catalog with one bit flipped in the middle of its postings section (which a
    /// structure-only open never reads).
    static func postingsBitFlipped() -> [UInt8] {
        var bytes = DaemonFixture.shared.catalogBytes
        let postings = TestCatalogImage.section(.postings, in: bytes)
        bytes[postings.lowerBound + postings.count / 2] ^= 0x10
        return bytes
    }

    /// The configured catalog must be usable: if it fails the check, the daemon refuses to
    /// start and says exactly why.
    @Test func aConfiguredCatalogThatFailsStopsStartUpWithTheReason() async throws {
        let first = try await stoppedDaemon()
        try Data(Self.postingsBitFlipped()).write(to: URL(fileURLWithPath: catalogPath(first, "flip.earcat")))
        let daemon = try await DaemonHarness(reusing: first.directory, clientKeys: first.clientKeys,
                                       settings: ["--session.catalog=flip"], waitUntilListening: false)
        try? await eventually("earshotd exits", within: .seconds(30)) { !daemon.process.isRunning }
        #expect(daemon.stop() == 1)
        #expect(daemon.log.contains("catalog \"flip\" in \(first.directory.appendingPathComponent("state/catalogs").path) cannot be used: checksum mismatch in section postings (file corrupt)"),
                "\(daemon.log)")
    }

    /// SIGTERM while the daemon checks a large catalog (here 5 GB, sparse): it stops within a
    /// second, cleanly, instead of finishing the check (minutes in a debug build) and starting.
    @Test func stopWhileCheckingALargeCatalogIsPrompt() async throws {
        let first = try await stoppedDaemon()
        try TestCatalogImage.writeSparse(entries: 1_000_000_000, to: catalogPath(first, "big.earcat"))
        let daemon = try await DaemonHarness(reusing: first.directory, clientKeys: first.clientKeys, waitUntilListening: false)
        try await eventually("earshotd checks the big catalog", within: .seconds(30), every: .milliseconds(5)) {
            daemon.log.contains("checking catalog big") || !daemon.process.isRunning
        }
        try await Task.sleep(for: .milliseconds(300))  // into the check, not at its start: the moment of the stop
        #expect(daemon.process.isRunning, "\(daemon.log)")
        kill(daemon.process.processIdentifier, SIGTERM)
        let signalled = Date()
        try? await eventually("earshotd exits", within: .seconds(30), every: .milliseconds(5)) { !daemon.process.isRunning }
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
    @Test func stopAtAnyPointOfStartUpIsPromptAndClean() async throws {
        let first = try await stoppedDaemon()
        let state = first.directory.appendingPathComponent("state")
        let keyPath = state.appendingPathComponent("server.key").path
        for cycle in 0..<10 {
            if cycle % 2 == 0 {
                try? FileManager.default.removeItem(atPath: keyPath)
                try? FileManager.default.removeItem(atPath: state.appendingPathComponent("server.public").path)
            }
            let daemon = try await DaemonHarness(reusing: first.directory, clientKeys: first.clientKeys, waitUntilListening: false)
            try await Task.sleep(for: .microseconds(Int.random(in: 0...120_000)))  // a random moment of the start
            kill(daemon.process.processIdentifier, SIGTERM)
            let signalled = Date()
            try? await eventually("earshotd exits", within: .seconds(30), every: .milliseconds(5)) { !daemon.process.isRunning }
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
        let daemon = try await DaemonHarness(reusing: first.directory, clientKeys: first.clientKeys)
        #expect(daemon.stop() == 0)
    }
}

/// Hand-made `.earcat` images for tests that need what the writer never makes.
enum TestCatalogImage {
    static func load<T: FixedWidthInteger>(_ bytes: [UInt8], _ at: Int, _: T.Type) -> T {
        bytes[at..<(at + MemoryLayout<T>.size)].reversed().reduce(0) { $0 << 8 | T($1) }
    }

    enum Kind: UInt32 { case references = 1, directory = 2, peaks = 5, metadata = 6, postings = 8 }

    /// Where section `kind` lies, from the section table.
    static func section(_ kind: Kind, in bytes: [UInt8]) -> Range<Int> {
        let sectionCount = Int(load(bytes, 12, UInt16.self))
        let entry = (0..<sectionCount).map { 96 + 32 * $0 }.first { load(bytes, $0, UInt32.self) == kind.rawValue }!
        let offset = Int(load(bytes, entry + 8, UInt64.self)), length = Int(load(bytes, entry + 16, UInt64.self))
        return offset..<(offset + length)
    }

    /// A catalog with no references and `entries` postings whose header and section table are
    /// valid, written as a sparse file (nothing but the header is stored): the structure checks
    /// pass, and the full check reads gigabytes of zeros before it finds the index checksum wrong.
    static func writeSparse(entries: Int, to path: String) throws {
        var out: [UInt8] = Array("EARCAT".utf8) + [0, 1]
        func put<T: FixedWidthInteger>(_ v: T) { withUnsafeBytes(of: v.littleEndian) { out.append(contentsOf: $0) } }
        put(UInt16(2)); put(UInt16(96)); put(UInt16(5)); put(UInt16(0))
        put(UInt32(16_000)); put(UInt16(1024)); put(UInt16(128))
        let bits = 21
        put(UInt32(bits)); put(UInt32(0)); put(UInt64(entries)); put(UInt64(0))
        put((1.0).bitPattern); put((12.0).bitPattern)
        out += [UInt8](repeating: 0, count: 92 - out.count)
        let directoryBytes = ((1 << bits) + 1) * 4
        let sizes: [(Kind, Int, UInt32)] = [
            (.references, 0, 0), (.directory, directoryBytes, CRC32.checksum([UInt8](repeating: 0, count: directoryBytes))),
            (.postings, entries * 5, 1), (.peaks, 0, 0), (.metadata, 0, 0),
        ]
        var table: [UInt8] = []
        var offset = 96 + sizes.count * 32
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
