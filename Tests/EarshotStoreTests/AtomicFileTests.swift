import EarshotSystem
import Foundation
import Testing

/// Atomic writes: whole files or nothing, permissions kept or forced, temporaries of dead
/// writers cleaned up.
struct AtomicFileTests {
    @Test func atomicWriteKeepsPermissionsOfReplacedFile() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("perm-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try AtomicFile.write([1], to: path, mode: 0o600)
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int == 0o600)
        try AtomicFile.write([2], to: path)
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int == 0o600)
    }

    @Test func atomicWriteCanForceASecretsMode() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("perm-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try AtomicFile.write([1], to: path, mode: 0o644)
        try AtomicFile.write([2], to: path, mode: 0o600, forceMode: true)
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int == 0o600)
    }

    @Test func staleTemporariesOfDeadWritersAreRemoved() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("stale-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let finished = Process()
        finished.executableURL = URL(fileURLWithPath: "/bin/true")
        try finished.run()
        finished.waitUntilExit()
        let dead = finished.processIdentifier
        let names = [".a.earcat.tmp-\(dead)-17", ".b.key.tmp-\(getpid())-18", "c.tmp-\(dead)-19", ".d.tmp-x-1", "e.earcat"]
        for name in names { _ = FileManager.default.createFile(atPath: folder.appendingPathComponent(name).path, contents: Data([1])) }
        #expect(AtomicFile.removeStaleTemporaries(in: folder.path) == [".a.earcat.tmp-\(dead)-17"])
        let left = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        #expect(left == Array(names.dropFirst()).sorted(), "a live writer's file and other names stay")
    }

    @Test func atomicWriteReplacesWholeFileAndLeavesNoTemporaries() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("aw-\(UUID())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/c.earcat"
        try AtomicFile.write([1, 2, 3], to: path)
        try AtomicFile.write([4, 5], to: path)
        #expect(try AtomicFile.read(path) == [4, 5])
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["c.earcat"])
        #expect(throws: SystemError.self) { try AtomicFile.write([1], to: dir + "/missing/x") }
    }
}
