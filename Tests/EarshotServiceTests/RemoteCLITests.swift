import EarshotTransport
import Foundation
import Testing

/// `earshot remote …` against a real earshotd: what a person at a terminal sees.
@Suite("earshot remote", .serialized)
struct RemoteCLITests {
    private func earshot(_ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
        let binary = ((try DaemonHarness.executable()) as NSString).deletingLastPathComponent + "/earshot"
        let p = Process()
        p.executableURL = URL(fileURLWithPath: binary)
        p.arguments = arguments
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = FileHandle.nullDevice
        try p.run()
        let o = out.fileHandleForReading.readDataToEndOfFile(), e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
    }

    /// `--server-key` and `--key` options for the harness's operator key (CURVE, the default).
    private func keys(_ daemon: DaemonHarness) throws -> [String] {
        let keyFile = daemon.directory.appendingPathComponent("operator.key").path
        try CurveKeyFile.writeSecret(try #require(daemon.clientKeys[.operator]), to: keyFile, comment: "test operator")
        return ["--server-key", try #require(daemon.serverPublicKey), "--key", keyFile]
    }

    @Test func matchStateStreamAndWatch() throws {
        let daemon = try DaemonHarness()
        let k = try keys(daemon)
        Thread.sleep(forTimeInterval: 3)
        let match = try earshot(["remote", "match", "--server", daemon.rpcEndpoint, "--timeout", "60"] + k)
        #expect(match.status == 0, "\(match.err)")
        #expect(match.out.hasPrefix("match: Piece 1"))

        let json = try earshot(["remote", "match", "--server", daemon.rpcEndpoint, "--timeout", "60", "--json"] + k)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any])
        #expect(object["outcome"] as? String == "MATCH_OUTCOME_MATCH")

        let state = try earshot(["remote", "state", "--server", daemon.rpcEndpoint, "--timeout", "60"] + k)
        #expect(state.status == 0)
        #expect(state.out.contains("now playing: Piece 1"))
        #expect(state.out.contains("capture: file:"))

        let stream = try earshot(["remote", "stream", "--server", daemon.rpcEndpoint, "--duration", "3", "--repeats"] + k)
        #expect(stream.status == 0, "\(stream.err)")
        #expect(stream.out.split(separator: "\n").filter { $0.contains("Piece 1") }.count >= 2)

        let watch = try earshot(["remote", "watch", "--server", daemon.rpcEndpoint, "--events", daemon.eventsEndpoint,
                                 "--duration", "2.5", "--timeout", "60"] + k)
        #expect(watch.status == 0, "\(watch.err)")
        #expect(watch.out.contains("now playing: Piece 1"))
    }

    @Test func noDaemonIsAClearErrorNotAHang() throws {
        let run = try earshot(["remote", "match", "--server", "tcp://127.0.0.1:9", "--timeout", "1"])
        #expect(run.status == 5)
        #expect(run.err.contains("tcp://127.0.0.1:9"))
        #expect(run.err.contains("DEADLINE_EXCEEDED"))
        let usage = try earshot(["remote", "match", "--server", "http://x"])
        #expect(usage.status == 2)
        #expect(usage.err.contains("--server must look like tcp://host:port"))
    }
}
