import EarshotTestSupport
import EarshotWire
import Foundation
import Testing

/// proto/ is the source of truth: it must compile with Debian's protoc, and the committed code
/// and method table must be what it says.
struct ProtoFilesTests {
    static let root = Repository.root
    static var protoFiles: [String] {
        let dir = root.appendingPathComponent("proto/earshot/v1")
        return ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).filter { $0.hasSuffix(".proto") }.sorted()
            .map { "proto/earshot/v1/\($0)" }
    }

    /// Runs a tool in the package root; returns (status, stdout+stderr).
    static func run(_ tool: String, _ arguments: [String]) throws -> (Int32, String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = [tool] + arguments
        p.currentDirectoryURL = root
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = pipe
        try p.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test func protoFilesCompile() throws {
        #expect(Self.protoFiles.count >= 7)
        let folder = try TemporaryDirectory("earshot-proto")
        let out = folder.url("earshot.desc")
        let (status, text) = try Self.run("protoc", ["-I", "proto", "--descriptor_set_out=\(out.path)"] + Self.protoFiles)
        #expect(status == 0, "protoc: \(text)")
    }

    /// The Swift code records the checksums of the .proto files it was made from.
    @Test func generatedSwiftIsFromTheseProtoFiles() throws {
        let recorded = try String(contentsOf: Self.root.appendingPathComponent("Sources/EarshotWire/Generated/proto-sources.sha256"),
                                  encoding: .utf8)
        let (status, current) = try Self.run("sha256sum", Self.protoFiles)
        #expect(status == 0)
        #expect(recorded == current, "proto/ changed since the code was generated: run scripts/generate-proto.sh")
        // And every .proto has its generated file.
        for file in Self.protoFiles {
            let name = (file as NSString).lastPathComponent.replacingOccurrences(of: ".proto", with: ".pb.swift")
            #expect(FileManager.default.fileExists(atPath: Self.root.appendingPathComponent("Sources/EarshotWire/Generated/\(name)").path))
        }
    }

    /// protoc's Python generator is built in, so the Python code can be compared byte for byte.
    @Test func generatedPythonMatches() throws {
        let folder = try TemporaryDirectory("earshot-py")
        let out = folder.url
        let (status, text) = try Self.run("protoc", ["-I", "proto", "--python_out=\(out.path)"] + Self.protoFiles)
        #expect(status == 0, "protoc: \(text)")
        for file in Self.protoFiles {
            let name = (file as NSString).lastPathComponent.replacingOccurrences(of: ".proto", with: "_pb2.py")
            let fresh = try Data(contentsOf: out.appendingPathComponent("earshot/v1/\(name)"))
            let committed = try Data(contentsOf: Self.root.appendingPathComponent("clients/python/src/earshot/v1/\(name)"))
            #expect(fresh == committed, "\(name) is stale: run scripts/generate-proto.sh")
        }
    }

    /// The hand-written method table lists exactly the rpc lines of the service blocks.
    @Test func methodTableMatchesTheServices() throws {
        var declared: [String: Bool] = [:]
        let rpc = try NSRegularExpression(pattern: #"rpc\s+(\w+)\s*\(\s*\w+\s*\)\s*returns\s*\(\s*(stream\s+)?\w+\s*\)"#)
        let service = try NSRegularExpression(pattern: #"service\s+(\w+)\s*\{([^}]*)\}"#)
        for file in Self.protoFiles {
            let text = try String(contentsOf: Self.root.appendingPathComponent(file), encoding: .utf8)
            let ns = text as NSString
            for s in service.matches(in: text, range: NSRange(location: 0, length: ns.length)) {
                let name = ns.substring(with: s.range(at: 1))
                let body = ns.substring(with: s.range(at: 2)) as NSString
                for m in rpc.matches(in: body as String, range: NSRange(location: 0, length: body.length)) {
                    declared["/earshot.v1.\(name)/\(body.substring(with: m.range(at: 1)))"] = m.range(at: 2).location != NSNotFound
                }
            }
        }
        let table = Dictionary(uniqueKeysWithValues: Methods.all.map { ($0.path, $0.serverStreaming) })
        #expect(declared == table)
    }
}
