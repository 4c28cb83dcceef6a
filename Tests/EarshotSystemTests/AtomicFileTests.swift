import EarshotSystem
import EarshotTestSupport
import Foundation
import Testing

/// Atomic writes: whole files or nothing, permissions kept or forced, temporaries of dead
/// writers cleaned up.
struct AtomicFileTests {
    @Test func atomicWriteKeepsPermissionsOfReplacedFile() throws {
        let folder = try TemporaryDirectory("earshot-perm")
        let path = folder.path("file")
        try AtomicFile.write([1], to: path, mode: 0o600)
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int == 0o600)
        try AtomicFile.write([2], to: path)
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int == 0o600)
    }

    @Test func atomicWriteCanForceASecretsMode() throws {
        let folder = try TemporaryDirectory("earshot-perm")
        let path = folder.path("file")
        try AtomicFile.write([1], to: path, mode: 0o644)
        try AtomicFile.write([2], to: path, mode: 0o600, forceMode: true)
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int == 0o600)
    }

    @Test func staleTemporariesOfDeadWritersAreRemoved() throws {
        let folder = try TemporaryDirectory("earshot-stale")
        let finished = Process()
        finished.executableURL = URL(fileURLWithPath: "/bin/true")
        try finished.run()
        finished.waitUntilExit()
        let dead = finished.processIdentifier
        let names = [".a.earcat.tmp-\(dead)-17", ".b.key.tmp-\(getpid())-18", "c.tmp-\(dead)-19", ".d.tmp-x-1", "e.earcat"]
        for name in names { try folder.write(name, [1]) }
        #expect(AtomicFile.removeStaleTemporaries(in: folder.path) == [".a.earcat.tmp-\(dead)-17"])
        let left = try folder.names()
        #expect(left == Array(names.dropFirst()).sorted(), "a live writer's file and other names stay")
    }

    @Test func atomicWriteReplacesWholeFileAndLeavesNoTemporaries() throws {
        let folder = try TemporaryDirectory("earshot-aw")
        let dir = folder.path
        let path = dir + "/c.earcat"
        try AtomicFile.write([1, 2, 3], to: path)
        try AtomicFile.write([4, 5], to: path)
        #expect(try AtomicFile.read(path) == [4, 5])
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["c.earcat"])
        #expect(throws: SystemError.self) { try AtomicFile.write([1], to: dir + "/missing/x") }
    }
}
