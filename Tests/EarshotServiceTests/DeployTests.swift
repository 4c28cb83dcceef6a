import EarshotTestSupport
import Foundation
import Testing
import EarshotSystem

/// deploy/install.sh into a staging root (no systemd, no user): everything lands where the unit
/// expects it, and a second run changes nothing and keeps an edited configuration.
struct DeployTests {
    private func install(into root: URL, binaries: String) throws -> (Int32, String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/bash")
        p.arguments = [Repository.root.appendingPathComponent("deploy/install.sh").path,
                       "--root", root.path, "--skip-build", "--bin-dir", binaries, "--no-systemctl"]
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = pipe
        try p.run()
        let out = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        return (p.terminationStatus, out)
    }

    @Test func installIsCompleteAndSafeToRunTwice() throws {
        let binaries = (try DaemonHarness.executable() as NSString).deletingLastPathComponent
        let scratch = try TemporaryDirectory("earshot-stage")
        let root = scratch.url("root")
        let (status, first) = try install(into: root, binaries: binaries)
        #expect(status == 0, "\(first)")
        for path in ["usr/local/bin/earshotd", "usr/local/bin/earshot", "etc/systemd/system/earshotd.service",
                     "etc/earshot/earshotd.toml", "usr/local/share/doc/earshot/asoundrc.sample"] {
            #expect(FileManager.default.fileExists(atPath: root.appendingPathComponent(path).path), "\(path) missing")
        }
        #expect(FileManager.default.isExecutableFile(atPath: root.appendingPathComponent("usr/local/bin/earshotd").path))
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: root.appendingPathComponent("var/lib/earshot/catalogs").path, isDirectory: &isDirectory))
        // The unit runs what was installed, with the installed configuration.
        let unit = try String(contentsOf: root.appendingPathComponent("etc/systemd/system/earshotd.service"), encoding: .utf8)
        #expect(unit.contains("ExecStart=/usr/local/bin/earshotd --config /etc/earshot/earshotd.toml"))
        #expect(unit.contains("SupplementaryGroups=audio") && unit.contains("Restart=on-failure") && unit.contains("LimitRTPRIO="))

        let config = root.appendingPathComponent("etc/earshot/earshotd.toml")
        let edited = try String(contentsOf: config, encoding: .utf8) + "\n[audio]\ndevice = \"plughw:1,0\"\n"
        try AtomicFile.write(Array(edited.utf8), to: config.path)
        let (again, second) = try install(into: root, binaries: binaries)
        #expect(again == 0)
        #expect(!second.contains("wrote"), "a second run rewrote files: \(second)")
        #expect(second.contains("kept"))
        #expect(try String(contentsOf: config, encoding: .utf8) == edited)
    }
}
