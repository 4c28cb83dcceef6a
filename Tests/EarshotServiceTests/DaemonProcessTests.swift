import EarshotCore
import EarshotTransport
import EarshotWire
import EarshotTestSupport
import Foundation
import Testing

/// earshotd as a process: its command line, exit statuses and signals. (What it answers is
/// `InProcessDaemonTests.DaemonCallTests`'.)
@Suite("earshotd process", .serialized)
struct DaemonProcessTests {
    /// `systemctl stop` (or reload) while the daemon is still starting: the stop ends start-up
    /// cleanly, a reload is carried out once the daemon is up. (A signal's default action would
    /// kill it; one ignored until a handler is installed would be lost, and the stop would hang.)
    @Test func signalsDuringStartUpAreTakenOnceItIsUp() async throws {
        let first = try await DaemonHarness()
        #expect(first.stop() == 0)
        for signal in [SIGHUP, SIGTERM] {
            let daemon = try await DaemonHarness(reusing: first.directory, clientKeys: first.clientKeys, settings: [], waitUntilListening: false)
            // Once it has read its configuration and is building the daemon.
            try await eventually("earshotd reads its configuration", within: .seconds(30), every: .milliseconds(1)) {
                daemon.log.contains("starting with") || !daemon.process.isRunning
            }
            kill(daemon.process.processIdentifier, signal)
            if signal == SIGTERM {
                try? await eventually("earshotd exits", within: .seconds(30)) { !daemon.process.isRunning }
                #expect(!daemon.process.isRunning, "a SIGTERM sent during start-up was lost: \(daemon.log)")
                #expect(daemon.process.terminationReason == .exit && daemon.process.terminationStatus == 0, "\(daemon.log)")
                #expect(daemon.log.contains("signal SIGTERM: shutting down"))
            } else {
                // SIGHUP only re-reads the allow-list: the daemon comes up and serves.
                try await daemon.waitUntilListening()
                let client = try daemon.client(.viewer)
                defer { client.close() }
                _ = try await client.call(Methods.Health.check, Earshot_V1_HealthCheckRequest(), timeout: .seconds(30))
                #expect(daemon.process.isRunning)
                #expect(daemon.stop() == 0)
            }
        }
    }

    @Test func badConfigurationExitsWithTwoAndSaysWhy() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try DaemonHarness.executable())
        process.arguments = ["--audio.sample_rate=fast"]
        let pipe = Pipe()
        process.standardError = pipe
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 2)
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(text.contains("audio.sample_rate must be a whole number"))
    }

    /// Runs earshotd to its exit (for command lines that never start the daemon).
    private func earshotd(_ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try DaemonHarness.executable())
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let o = out.fileHandleForReading.readDataToEndOfFile(), e = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
    }

    @Test func aBadCommandLineExitsWithTwoAndNamesTheArgument() throws {
        for argument in ["--audio_device=x", "--audio.device", "stray", "-x"] {
            let run = try earshotd([argument])
            #expect(run.status == 2, "\(argument)")
            #expect(run.err.hasPrefix("earshotd: unknown argument \(argument)"), "\(argument): \(run.err)")
            #expect(run.out.isEmpty)
        }
        let missing = try earshotd(["--config"])
        #expect(missing.status == 2)
        #expect(missing.err.contains("--config"))
        let unreadable = try earshotd(["--config", "/nonexistent/earshotd.toml"])
        #expect(unreadable.status == 2)
        #expect(unreadable.err == "earshotd: /nonexistent/earshotd.toml: cannot read the configuration file\n")
    }

    @Test func checkConfigPrintsTheFileWithTheOverrides() throws {
        let scratch = try TemporaryDirectory("earshotd-config")
        let file = scratch.url("earshotd.toml")
        try "[audio]\ndevice = \"hw:0,0\"\nsample_rate = 44100\n".write(to: file, atomically: false, encoding: .utf8)
        for config in [["--config", file.path], ["--config=\(file.path)"]] {
            let run = try earshotd(config + ["--audio.device=plughw:1,0", "--check-config", "--rpc.listen=[\"tcp://0.0.0.0:7400\"]"])
            #expect(run.status == 0, "\(run.err)")
            #expect(run.out.contains("from \(file.path)"))
            #expect(run.out.contains("device = \"plughw:1,0\""))
            #expect(run.out.contains("sample_rate = 44100"))
            #expect(run.out.contains("listen = [\"tcp://0.0.0.0:7400\"]"))
        }
    }

    @Test func helpTeachesTheCommandLine() throws {
        for flag in ["--help", "-h"] {
            let run = try earshotd([flag])
            #expect(run.status == 0)
            for needed in ["--config", "--check-config", "--section.key=value", "--audio.device=plughw:1,0", "/etc/earshot/earshotd.toml",
                           "deploy/earshotd.toml", "Exit status", "cannot start"] {
                #expect(run.out.contains(needed), "\(flag) does not mention \(needed)")
            }
        }
    }
}
