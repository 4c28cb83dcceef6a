import EarshotCore
import EarshotSync
import EarshotTestSupport
import EarshotTransport
import EarshotWire
import Foundation
import Testing

/// Everything a dashboard hears while it watches: Health/Watch messages for the whole daemon,
/// and the health and session events.
private final class Watchers: Sendable {
    let healthWatch = Locked<[Earshot_V1_HealthCheckResponse]>([])
    let healthEvents = Locked<[Earshot_V1_HealthEvent]>([])
    let sessionEvents = Locked<[Earshot_V1_SessionSnapshot]>([])
    let heartbeats = Locked(0)
    private let tasks: [Task<Void, Never>]
    private let subscriber: EventSubscriber

    init(_ daemon: some RunningDaemon, client: RpcClient) throws {
        subscriber = try EventSubscriber(endpoint: daemon.eventsEndpoint, topics: [Topics.health, Topics.session, Topics.heartbeat],
                                         security: daemon.security(.viewer))
        let (subscriber, healthWatch, healthEvents, sessionEvents, heartbeats) =
            (self.subscriber, self.healthWatch, self.healthEvents, self.sessionEvents, self.heartbeats)
        var request = Earshot_V1_HealthCheckRequest()
        request.service = ""
        let watch = client.stream(Methods.Health.watch, request, timeout: .seconds(600))
        tasks = [
            Task {
                do { for try await reply in watch { healthWatch.withLock { $0.append(reply) } } } catch {}
            },
            Task {
                for await event in subscriber.events {
                    switch event.body {
                    case .health(let h): healthEvents.withLock { $0.append(h) }
                    case .session(let s): sessionEvents.withLock { $0.append(s) }
                    case .heartbeat: heartbeats.withLock { $0 += 1 }
                    default: break
                    }
                }
            },
        ]
    }

    /// Once the watch has its first answer and the subscription carries events.
    func ready() async throws {
        _ = try await eventually("the watchers are connected", { (healthWatch.withLock { $0.count }, heartbeats.withLock { $0 }) },
                                 until: { $0.0 > 0 && $0.1 > 0 })
    }

    func close() {
        for t in tasks { t.cancel() }
        subscriber.close()
    }
}

extension InProcessDaemonTests {
    /// earshotd with its programme file (or ALSA device) going away and coming back: a capture
    /// problem that the snapshot, Health, Match, the events and the log all tell, until audio flows
    /// again by itself.
    @Suite("earshotd capture faults")
    struct DaemonCaptureTests {
        enum Fault: String, CaseIterable, CustomTestStringConvertible {
            case deleted, truncated, overwrittenWithGarbage
            var testDescription: String { rawValue }

            func apply(to file: URL) throws {
                switch self {
                case .deleted:
                    try FileManager.default.removeItem(at: file)
                case .truncated:
                    // In place (the same inode), as a shell redirection does.
                    let handle = try FileHandle(forWritingTo: file)
                    try handle.truncate(atOffset: 0)
                    try handle.close()
                case .overwrittenWithGarbage:
                    // In place, and never empty on the way: truncating first would let the daemon see an empty
                    // file (a fault of its own, rightly reported) before the garbage arrives.
                    let handle = try FileHandle(forWritingTo: file)
                    try handle.write(contentsOf: Data(repeating: 0x5A, count: 200_000))
                    try handle.truncate(atOffset: 200_000)
                    try handle.close()
                }
            }

            /// The reason the file source gives, after the path.
            var reason: String {
                switch self {
                case .deleted: "no such file (the file does not exist)"
                case .truncated: "the file is empty; it holds no audio"
                case .overwrittenWithGarbage: "not a recognised audio file"
                }
            }
        }

        private func snapshot(_ client: RpcClient) async throws -> Earshot_V1_SessionSnapshot {
            try await client.call(Methods.Session.getSnapshot, Earshot_V1_GetSnapshotRequest())
        }

        private func health(_ client: RpcClient, _ service: String = "") async throws -> Earshot_V1_HealthCheckResponse {
            var request = Earshot_V1_HealthCheckRequest()
            request.service = service
            return try await client.call(Methods.Health.check, request)
        }

        private func match(_ client: RpcClient) async throws -> Earshot_V1_MatchResult {
            try await client.call(Methods.Recognizer.match, Earshot_V1_MatchRequest(), timeout: .seconds(60))
        }

        /// The daemon's lines about capture: problems and recoveries.
        private func captureLines(_ daemon: some RunningDaemon) -> [String] {
            daemon.log.split(separator: "\n").map(String.init).filter { $0.contains("audio capture") }
        }

        @Test(arguments: Fault.allCases)
        func programmeFileFaultIsACaptureProblemUntilTheFileIsBack(_ fault: Fault) async throws {
            try await InProcessDaemon.with { daemon in
                let client = try daemon.client()
                defer { client.close() }
                let tv = daemon.directory.appendingPathComponent("tv.wav")
                let programme = try Data(contentsOf: tv)

                let before = try await match(client)
                #expect(before.outcome == .match)
                #expect(try await snapshot(client).hasCurrentMatch)
                let watchers = try Watchers(daemon, client: client)
                defer { watchers.close() }
                try await watchers.ready()

                try fault.apply(to: tv)
                let problem = "\(tv.path): \(fault.reason)"
                let down = try await eventually("the snapshot shows the problem", { try await snapshot(client) },
                                                until: { !$0.captureProblem.isEmpty })
                #expect(down.captureProblem.hasPrefix(problem), "\(down.captureProblem)")
                // Nothing heard before the problem is kept, and nothing is said to be playing.
                #expect(down.windowSeconds == 0)
                #expect(!down.hasCurrentMatch)

                let daemonHealth = try await health(client)
                #expect(daemonHealth.status == .notServing)
                #expect(daemonHealth.message == "audio capture: \(down.captureProblem)")
                let recognizer = try await health(client, "earshot.v1.Recognizer")
                #expect(recognizer.status == .notServing && recognizer.message == daemonHealth.message)
                for service in ["earshot.v1.Session", "earshot.v1.Catalogs", "earshot.v1.Health"] {
                    let other = try await health(client, service)
                    #expect(other.status == .serving && other.message.isEmpty, "\(service): \(other)")
                }

                // Matches answer with the problem, never from the audio heard before it, and leave it as it is.
                for _ in 0..<3 {
                    let answer = try await match(client)
                    #expect(answer.outcome == .error, "\(answer)")
                    #expect(answer.error.message.contains(problem), "\(answer.error.message)")
                    let after = try await snapshot(client)
                    #expect(after.captureProblem == down.captureProblem)
                    #expect(!after.hasCurrentMatch, "the offset is still being moved on: \(after.currentMatch)")
                }
                // The file is retried (not once per retry in the log), and nobody hears it works again yet.
                _ = try await eventually("a few attempts to reopen the file", { try await snapshot(client) },
                                         until: { $0.capture.reopenAttempts >= 3 })
                #expect(!daemon.log.contains("audio capture works again"), "\(daemon.log)")
                #expect(try await health(client).status == .notServing)

                // Back (written whole, then renamed over): capture resumes by itself.
                let staged = daemon.directory.appendingPathComponent("staged.wav")
                try programme.write(to: staged)
                #expect(rename(staged.path, tv.path) == 0)
                _ = try await eventually("audio flows again", { try await snapshot(client) }, until: { $0.captureProblem.isEmpty })
                let recovered = try await health(client)
                #expect(recovered.status == .serving && recovered.message.isEmpty, "\(recovered)")
                let again = try await match(client)
                #expect(again.outcome == .match, "\(again)")
                #expect(again.items.first?.mediaItem.id == "piece1")

                // Health/Watch and the events told the same story.
                _ = try await eventually("the watch sees the recovery", { watchers.healthWatch.withLock { $0 } },
                                         until: { $0.last?.status == .serving && $0.count >= 3 })
                let watched = watchers.healthWatch.withLock { $0 }.map { "\($0.status) \($0.message)" }
                #expect(watched == ["serving ", "notServing audio capture: \(down.captureProblem)", "serving "], "\(watched)")
                let healthEvents = try await eventually("the health events", { watchers.healthEvents.withLock { $0 } },
                                                        until: { $0.last?.status == .serving })
                #expect(healthEvents.map { "\($0.status) \($0.message)" } == ["notServing audio capture: \(down.captureProblem)", "serving "])
                let problems = watchers.sessionEvents.withLock { $0 }.map(\.captureProblem)
                #expect(problems.contains(down.captureProblem) && problems.last == "", "\(problems)")

                // The log: the problem once (per reason, not per retry), then that it works again.
                let lines = captureLines(daemon)
                let problemLines = lines.filter { $0.contains("audio capture: ") }
                #expect(!problemLines.isEmpty && problemLines.allSatisfy { $0.contains(problem) }, "\(lines)")
                #expect(problemLines.count == 1, "\(lines)")
                #expect(lines.last?.contains("audio capture works again after ") == true && lines.last?.hasSuffix(" s without audio") == true,
                        "\(lines)")
                #expect(lines.filter { $0.contains("works again") }.count == 1, "\(lines)")
                await daemon.stop()
            }
        }

        /// A programme file that is not there when the daemon starts is the same capture problem,
        /// until it appears.
        @Test func programmeFileMissingAtStartIsWaitedFor() async throws {
            try await InProcessDaemon.with(settings: ["--audio.file=/nonexistent/earshot/later.wav"]) { daemon in
                let client = try daemon.client()
                defer { client.close() }
                let down = try await eventually("the snapshot shows the problem", { try await snapshot(client) },
                                                until: { !$0.captureProblem.isEmpty })
                #expect(down.captureProblem == "/nonexistent/earshot/later.wav: no such file (the file does not exist)")
                #expect(try await health(client).message == "audio capture: \(down.captureProblem)")
                #expect(try await match(client).outcome == .error)
                await daemon.stop()
            }
        }

        /// Real ALSA through its file PCM: a device whose file is missing cannot be opened (alsa-lib
        /// says why), which is a capture problem until the file appears and capture starts by itself.
        @Test func alsaDeviceMissingIsACaptureProblemUntilItAppears() async throws {
            AlsaTestEnvironment.prepare()  // earshotd inherits ALSA_CONFIG_PATH
            let scratch = try TemporaryDirectory("earshotd-alsa")
            let folder = scratch.url
            let infile = folder.appendingPathComponent("programme.s16").path
            let device = AlsaTestEnvironment.device(reading: infile)
            try await InProcessDaemon.with(settings: ["--audio.source=alsa", "--audio.device=\(device)", "--audio.realtime_priority=0", "--session.follow=false"]) { daemon in
                let client = try daemon.client()
                defer { client.close() }
                let down = try await eventually("the snapshot shows the problem", { try await snapshot(client) },
                                                until: { !$0.captureProblem.isEmpty })
                #expect(down.captureProblem.hasPrefix("ALSA device \"\(device)\": cannot open for capture"), "\(down.captureProblem)")
                #expect(down.captureProblem.contains(infile), "\(down.captureProblem)")
                let daemonHealth = try await health(client)
                #expect(daemonHealth.status == .notServing && daemonHealth.message == "audio capture: \(down.captureProblem)")
                let answer = try await match(client)
                #expect(answer.outcome == .error && answer.error.message.contains(device), "\(answer)")
                #expect(try await snapshot(client).captureProblem == down.captureProblem)

                // The device appears: the next reopen (0.5 s, 1 s, 2 s … apart) captures from it.
                _ = try RawPCM.writeS16(RawPCM.int16(DaemonFixture.shared.programme), to: infile)
                _ = try await eventually("audio flows", { try await snapshot(client) }, until: { $0.captureProblem.isEmpty })
                #expect(try await health(client).status == .serving)
                // Stopped at once: ALSA's file PCM is not paced, so capture now keeps a core busy.
                await daemon.stop()
                let lines = captureLines(daemon)
                #expect(lines.count == 2 && lines[0].contains("audio capture: ALSA device") && lines[1].contains("works again"), "\(lines)")
            }
        }
    }
}
