import EarshotCore
import EarshotTransport
import EarshotWire
import Foundation
import Testing

/// earshotd as a real process on loopback, driven by the Swift client: the calls a second-screen
/// app makes, the events a dashboard reads, and faults — after each fault the daemon still serves.
@Suite("earshotd process", .serialized)
struct DaemonProcessTests {
    /// The programme plays piece 1 from 10 s to 50 s and loops. A window that spans the loop
    /// point matches one side of it: the part after the loop (its start then lies before 10 s in
    /// reference time) or the part before (then "now" is extrapolated past 50 s, by less than
    /// the 12 s window). Either way the match lies within piece 1's 10–50 s, give or take a window.
    private func expectPiece1(_ item: Earshot_V1_MatchedMediaItem) {
        #expect(item.mediaItem.id == "piece1")
        #expect(item.predictedCurrentMatchOffset >= 9.9 && item.predictedCurrentMatchOffset <= 62.2,
                "now at \(item.predictedCurrentMatchOffset) s, window from \(item.matchOffset) s")
        #expect(item.matchOffset >= -2.1 && item.matchOffset <= 50.2, "window from \(item.matchOffset) s")
        #expect(abs(item.frequencySkew) < 0.005)
        #expect(item.confidence > 0.3)
    }

    /// A well-behaved client gets a correct answer (checked after every fault).
    private func stillServes(_ daemon: DaemonHarness) async throws {
        let client = try daemon.client()
        defer { client.close() }
        let result = try await client.call(Methods.Recognizer.match, Earshot_V1_MatchRequest(), timeout: .seconds(60))
        #expect(result.outcome == .match)
        if let top = result.items.first { expectPiece1(top) }
    }

    @Test func prepareThenMatchAnswersFromTheWindow() async throws {
        let daemon = try DaemonHarness(settings: ["--session.follow=false", "--session.prepare_on_start=false"])
        let client = try daemon.client()
        defer { client.close() }
        let prepared = try await client.call(Methods.Recognizer.prepare, Earshot_V1_PrepareRequest())
        #expect(prepared.state == .prerecording)
        try await Task.sleep(for: .seconds(4))
        let result = try await client.call(Methods.Recognizer.match, Earshot_V1_MatchRequest())
        #expect(result.outcome == .match)
        let top = try #require(result.items.first)
        expectPiece1(top)
        #expect(top.catalog == "show")
        // Answered from audio already heard (how fast is the daemon benchmark's business).
        #expect(result.streamTime >= 3.5)
        let snapshot = try await client.call(Methods.Session.getSnapshot, Earshot_V1_GetSnapshotRequest())
        #expect(snapshot.state == .prerecording)
        #expect(snapshot.heardSeconds >= 3.5)
        #expect(snapshot.currentMatch.mediaItem.id == "piece1")
        #expect(daemon.stop() == 0)
        #expect(daemon.log.contains("stopping"))
    }

    @Test func streamedResultsAndLateJoiningDashboard() async throws {
        let daemon = try DaemonHarness()
        // The dashboard subscribes first, then takes the snapshot.
        let subscriber = try EventSubscriber(endpoint: daemon.eventsEndpoint, topics: [Topics.match, Topics.session, Topics.heartbeat], security: daemon.security(.viewer))
        defer { subscriber.close() }
        let client = try daemon.client()
        defer { client.close() }
        var streamed: Earshot_V1_MatchResult?
        for try await r in client.stream(Methods.Recognizer.streamMatches, Earshot_V1_StreamMatchesRequest(), timeout: .seconds(60)) {
            if r.outcome == .match {
                streamed = r
                break  // dropping the stream cancels it on the daemon
            }
        }
        let first = try #require(streamed?.items.first)
        expectPiece1(first)

        let snapshot = try await client.call(Methods.Session.getSnapshot, Earshot_V1_GetSnapshotRequest())
        let snapshotTaken = ContinuousClock.now
        var sawHeartbeat = false, sawNewer = false, dropped = 0
        var lastSeq: [String: UInt64] = [:]
        for await event in subscriber.events {
            #expect(event.epoch == snapshot.epoch)
            if let previous = lastSeq[event.topic] { #expect(event.seq == previous + 1, "per-topic seq has no gaps") }
            lastSeq[event.topic] = event.seq
            if case .heartbeat(let hb) = event.body {
                // A heartbeat sent a second after the snapshot knows at least what it knew.
                if ContinuousClock.now - snapshotTaken > .milliseconds(1100) {
                    sawHeartbeat = true
                    #expect(hb.heads[Topics.match, default: 0] >= snapshot.topicSeq[Topics.match, default: 0])
                }
            } else if event.seq <= snapshot.topicSeq[event.topic, default: 0] {
                dropped += 1  // already in the snapshot: a late joiner drops it
            } else {
                sawNewer = true
            }
            if sawHeartbeat && (sawNewer || dropped > 0) { break }
        }
        #expect(sawHeartbeat)
        #expect(snapshot.topicSeq[Topics.match, default: 0] >= 1, "follow mode published matches")
        try await stillServes(daemon)
    }

    @Test func faultsLeaveTheDaemonServing() async throws {
        let daemon = try DaemonHarness(settings: ["--rpc.max_message_bytes=65536"])
        let client = try daemon.client()
        defer { client.close() }

        // Unknown method.
        let unknown = RpcMethod<Earshot_V1_MatchRequest, Earshot_V1_MatchResult>("/earshot.v1.Recognizer/Nope")
        await #expect(throws: RpcError.self) { _ = try await client.call(unknown, Earshot_V1_MatchRequest()) }
        do { _ = try await client.call(unknown, Earshot_V1_MatchRequest()) } catch { #expect(error.code == .unimplemented) }

        // A payload that is not the request message.
        var garbage = Earshot_V1_MatchSignatureRequest()
        garbage.signature = Data("not a signature".utf8)
        do {
            _ = try await client.call(Methods.Recognizer.matchSignature, garbage)
            Issue.record("a garbage signature was accepted")
        } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("signature"))
        }

        // A deadline the daemon cannot meet: cancelled, the session listens from scratch.
        _ = try await client.call(Methods.Recognizer.cancel, Earshot_V1_CancelRequest())
        do {
            _ = try await client.call(Methods.Recognizer.match, Earshot_V1_MatchRequest(), timeout: .milliseconds(200))
            Issue.record("a match that needs a second of audio answered within 200 ms")
        } catch {
            #expect(error.code == .deadlineExceeded)
        }
        try await stillServes(daemon)

        // A client that goes away in the middle of a stream.
        do {
            let leaving = try daemon.client()
            let stream = leaving.stream(Methods.Recognizer.streamMatches, Earshot_V1_StreamMatchesRequest(), timeout: .seconds(30))
            var it = stream.makeAsyncIterator()
            _ = try await it.next()
            leaving.close()
        }
        try await stillServes(daemon)

        // Raw garbage on the RPC socket, and a message over rpc.max_message_bytes.
        try RawPeer.send(to: daemon.rpcEndpoint, security: daemon.security(), frames: [Array("hello".utf8)])
        try RawPeer.send(to: daemon.rpcEndpoint, security: daemon.security(), frames: [Array("EARSHOT/1".utf8), [0xFF, 0xFF, 0xFF, 0x01]])
        try RawPeer.send(to: daemon.rpcEndpoint, security: daemon.security(), frames: [Array("EARSHOT/1".utf8), [UInt8](repeating: 7, count: 200_000)])
        try await stillServes(daemon)

        let stats = try await client.call(Methods.Health.getStats, Earshot_V1_GetStatsRequest())
        #expect(stats.counters["matches", default: 0] >= 1)
        #expect(stats.counters.keys.contains { $0.hasPrefix("rpc_") })
        let health = try await client.call(Methods.Health.check, Earshot_V1_HealthCheckRequest())
        #expect(health.status == .serving)
        #expect(daemon.stop() == 0)
    }

    /// `systemctl stop` (or reload) while the daemon is still starting: the stop ends start-up
    /// cleanly, a reload is carried out once the daemon is up. (A signal's default action would
    /// kill it; one ignored until a handler is installed would be lost, and the stop would hang.)
    @Test func signalsDuringStartUpAreTakenOnceItIsUp() async throws {
        let first = try DaemonHarness()
        #expect(first.stop() == 0)
        for signal in [SIGHUP, SIGTERM] {
            let daemon = try DaemonHarness(reusing: first.directory, settings: [], waitUntilListening: false)
            // Once it has read its configuration and is building the daemon.
            let started = ContinuousClock.now
            while !daemon.log.contains("starting with"), daemon.process.isRunning, ContinuousClock.now - started < .seconds(30) {
                try await Task.sleep(for: .milliseconds(1))
            }
            kill(daemon.process.processIdentifier, signal)
            if signal == SIGTERM {
                let deadline = ContinuousClock.now + .seconds(30)
                while daemon.process.isRunning, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
                #expect(!daemon.process.isRunning, "a SIGTERM sent during start-up was lost: \(daemon.log)")
                #expect(daemon.process.terminationReason == .exit && daemon.process.terminationStatus == 0, "\(daemon.log)")
                #expect(daemon.log.contains("signal SIGTERM: shutting down"))
            } else {
                // SIGHUP only re-reads the allow-list: the daemon comes up and serves.
                let client = try RpcClient(endpoint: try await waitForEndpoint(daemon), configuration: {
                    var configuration = RpcClient.Configuration()
                    configuration.security = ClientSecurity(serverPublicKey: try CurveKeyFile.readKey(first.directory.appendingPathComponent("state/server.public").path),
                                                            keyPair: first.clientKeys[.viewer]!)
                    return configuration
                }())
                defer { client.close() }
                _ = try await client.call(Methods.Health.check, Earshot_V1_HealthCheckRequest(), timeout: .seconds(30))
                #expect(daemon.process.isRunning)
                #expect(daemon.stop() == 0)
            }
        }
    }

    /// The RPC endpoint a daemon started without waiting logs once it is up.
    private func waitForEndpoint(_ daemon: DaemonHarness) async throws -> String {
        for _ in 0..<600 {
            if let line = daemon.log.split(separator: "\n").first(where: { $0.contains("listening on") }),
               let words = Optional(line.split(separator: " ").map(String.init)), let r = words.firstIndex(of: "RPC") {
                return words[r + 1].trimmingCharacters(in: CharacterSet(charactersIn: ";"))
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw HarnessError("the daemon did not come up: \(daemon.log)")
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
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("earshotd-\(UUID().uuidString).toml")
        defer { try? FileManager.default.removeItem(at: file) }
        try "[audio]\ndevice = \"hw:0,0\"\nsample_rate = 44100\n".write(to: file, atomically: true, encoding: .utf8)
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

    /// A box with no catalog yet starts (so a catalog can be pushed to it), says so, answers
    /// Match with a clear error, and matches once a catalog is copied in.
    @Test func noCatalogStartsAndWaitsForOne() async throws {
        let first = try DaemonHarness()
        #expect(first.stop() == 0)
        let catalog = first.directory.appendingPathComponent("state/catalogs/show.earcat")
        try FileManager.default.removeItem(at: catalog)
        let daemon = try DaemonHarness(reusing: first.directory, clientKeys: first.clientKeys)
        defer { daemon.stop() }
        #expect(daemon.log.contains("no catalog is enabled"), "\(daemon.log)")
        let client = try daemon.client()
        defer { client.close() }
        let none = try await client.call(Methods.Recognizer.match, Earshot_V1_MatchRequest())
        #expect(none.outcome == .error && none.error.message.contains("no catalog is enabled"), "\(none)")
        try Data(DaemonFixture.shared.catalogBytes).write(to: catalog)
        let deadline = Date().addingTimeInterval(20)
        var result = none
        while Date() < deadline, result.outcome != .match {
            try await Task.sleep(for: .milliseconds(200))
            result = try await client.call(Methods.Recognizer.match, Earshot_V1_MatchRequest())
        }
        #expect(result.outcome == .match && result.items.first?.catalog == "show", "\(result)")
    }
}
