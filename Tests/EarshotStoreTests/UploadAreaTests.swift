import EarshotCore
import EarshotCrypto
import EarshotStore
import EarshotSystem
import EarshotTestSupport
import Foundation
import Testing

/// The upload area on its own: offsets, limits, what survives a restart, expiry.
struct UploadAreaTests {
    let scratch: TemporaryDirectory
    /// The area's folder, which it makes.
    var folder: String { scratch.path("uploads") }

    init() throws { scratch = try TemporaryDirectory("earshot-uploads") }

    static let bytes: [UInt8] = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
    static var digest: [UInt8] { bytes.withUnsafeBytes { SHA256.hash($0) } }

    func area(_ limits: UploadArea.Limits = .init(), now: Double = 1000, free: Int? = 1 << 40) throws -> UploadArea {
        try UploadArea(directory: folder, limits: limits, now: now, availableBytes: { _ in free })
    }

    func write(_ a: UploadArea, _ id: String, at offset: Int, count: Int) throws -> Int {
        try Self.bytes[offset..<min(Self.bytes.count, offset + count)].withUnsafeBytes { try a.write(id: id, offset: offset, bytes: $0, now: 1001).held }
    }

    @Test func piecesAtOffsetsAreWrittenOnceAndSurviveARestart() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var a = try area()
        let (u, resumed) = try a.begin(name: "show", size: Self.bytes.count, sha256: Self.digest, enable: true, now: 1000)
        #expect(!resumed && u.held == 0)
        #expect(try write(a, u.id, at: 0, count: 4000) == 4000)
        #expect(try write(a, u.id, at: 0, count: 4000) == 4000)  // again: acknowledged, not appended
        #expect(try write(a, u.id, at: 3000, count: 2000) == 5000)  // overlapping: only the new part
        #expect(throws: UploadArea.Problem.self) { try write(a, u.id, at: 6000, count: 10) }  // a hole
        // Begin again (a client that lost the id): the same upload, where it was.
        // The resuming caller's `enable` wins, and is kept across a restart.
        let again = try a.begin(name: "show", size: Self.bytes.count, sha256: Self.digest, enable: false, now: 1002)
        #expect(again.upload.id == u.id && again.resumed && again.upload.held == 5000 && !again.upload.enable)
        // A restart (a new area on the same folder): the upload and its offset are still there.
        a = try area(now: 2000)
        #expect(a.uploads.map(\.id) == [u.id] && a.uploads[0].held == 5000 && a.uploads[0].name == "show" && !a.uploads[0].enable)
        #expect(try write(a, u.id, at: 5000, count: 5000) == 10_000)
        let done = try a.completed(id: u.id)
        #expect(try Array(Data(contentsOf: URL(fileURLWithPath: done.path))) == Self.bytes)
        // After a restart the hash is recomputed by the verifier, not trusted from memory.
        #expect(done.sha256 == nil)
        a.installed(id: u.id)
        #expect(a.uploads.isEmpty)
    }

    @Test func limitsAreCheckedBeforeAByteIsAccepted() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let a = try area(.init(maximumBytes: 5000, maximumUploads: 2, maximumTotalBytes: 6000, reserveBytes: 1000), free: 8000)
        func refusal(_ size: Int, _ name: String = "x") -> String? {
            do { _ = try a.begin(name: name, size: size, sha256: Self.digest, enable: false, now: 1000); return nil } catch { return error.message }
        }
        #expect(refusal(6000)?.contains("catalogs.max_upload_bytes") == true)
        #expect(refusal(4000, "one") == nil)
        #expect(refusal(3000, "two")?.contains("max_upload_total_bytes") == true)
        #expect(refusal(2000, "two") == nil)
        #expect(refusal(100, "three")?.contains("catalogs.max_uploads") == true)
        let tight = try UploadArea(directory: folder + "-2", limits: .init(reserveBytes: 1000), now: 0, availableBytes: { _ in 3000 })
        defer { try? FileManager.default.removeItem(atPath: folder + "-2") }
        do {
            _ = try tight.begin(name: "big", size: 2500, sha256: Self.digest, enable: false, now: 0)
            Issue.record("an upload that would eat the reserve was accepted")
        } catch {
            #expect(error.kind == .resourceExhausted && error.message.contains("disk space"))
        }
        do {
            _ = try a.begin(name: "../x", size: 10, sha256: Self.digest, enable: false, now: 1000)
            Issue.record("a path was accepted as a name")
        } catch { #expect(error.kind == .invalidArgument) }
    }

    @Test func uploadsLeftAloneExpireAndStrayFilesAreRemoved() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let a = try area(.init(expirySeconds: 60))
        let (u, _) = try a.begin(name: "old", size: 100, sha256: Self.digest, enable: false, now: 1000)
        #expect(a.expire(now: 1030).isEmpty)
        #expect(a.expire(now: 1100).map(\.id) == [u.id])
        #expect(try Directory.names(in: folder).isEmpty)
        // A part file without its declaration (a crash between the two) is removed at start.
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: folder + "/0123456789abcdef.part"))
        _ = try area()
        #expect(try Directory.names(in: folder).isEmpty)
    }
}

