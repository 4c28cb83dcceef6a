import EarshotCore
import EarshotTestSupport
import Foundation
import Testing

/// One version for the package: the CLI, the daemon and the Python client all say `EarshotVersion.string`.
struct VersionTests {
    private func run(_ binary: String, _ arguments: [String]) throws -> (status: Int32, out: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: binary)
        p.arguments = arguments
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        p.standardInput = FileHandle.nullDevice
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    @Test func versionLooksLikeAVersion() {
        let parts = EarshotVersion.string.split(separator: ".", omittingEmptySubsequences: false)
        #expect(parts.count == 3 && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isNumber) }, "\(EarshotVersion.string)")
    }

    @Test func earshotdPrintsIt() throws {
        let daemon = try run(try DaemonHarness.executable(), ["--version"])
        #expect(daemon.status == 0)
        #expect(daemon.out == "earshotd \(EarshotVersion.string)")
    }

    @Test func earshotPrintsIt() throws {
        let cli = ((try DaemonHarness.executable()) as NSString).deletingLastPathComponent + "/earshot"
        let run = try run(cli, ["--version"])
        #expect(run.status == 0)
        #expect(run.out == EarshotVersion.string)
    }

    @Test func thePythonClientSaysIt() throws {
        let python = Repository.root.appendingPathComponent("clients/python")
        let pyproject = try String(contentsOf: python.appendingPathComponent("pyproject.toml"), encoding: .utf8)
        // The [project] table's `version = "…"`.
        let project = try #require(pyproject.components(separatedBy: "\n[").first { $0.hasPrefix("project]") || $0.hasPrefix("[project]") })
        let declared = project.split(separator: "\n").compactMap { line -> String? in
            let parts = line.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, parts[0] == "version" else { return nil }
            return parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        }
        #expect(declared == [EarshotVersion.string], "clients/python/pyproject.toml")

        let initFile = try String(contentsOf: python.appendingPathComponent("src/earshot_client/__init__.py"), encoding: .utf8)
        let versions = initFile.split(separator: "\n").filter { $0.hasPrefix("__version__") }
        #expect(versions == ["__version__ = \"\(EarshotVersion.string)\""], "clients/python/src/earshot_client/__init__.py")
    }
}
