import EarshotCore
import EarshotSync
import EarshotTestSupport
import EarshotTransport
import EarshotWire
import Foundation
import Synchronization
import Testing

/// `kill -9` at any moment of normal operation (making its key on first start, starting up,
/// serving calls and streams under load, re-reading its allow-list) and earshotd starts again
/// and serves, with its key pair, allow-list and catalogs exactly as they were. The clients of
/// the load are never recreated: they must find each new daemon by themselves.
@Suite("earshotd crash restart", .serialized)
struct DaemonCrashRestartTests {
    @Test func killedRepeatedlyUnderLoadItRestartsIntact() async throws {
        // Fixed ports, as in a deployment: each new daemon binds where the last one died.
        let settings = ["--rpc.listen=tcp://127.0.0.1:\(try freeLoopbackPort())",
                        "--events.listen=tcp://127.0.0.1:\(try freeLoopbackPort())"]
        let first = try await DaemonHarness(settings: settings)
        first.kill9()
        let folder = first.directory, keys = first.clientKeys
        let state = folder.appendingPathComponent("state")
        let keyPath = state.appendingPathComponent("server.key").path
        let publicPath = state.appendingPathComponent("server.public").path

        // A fresh box killed while it makes its key pair: afterwards there is no key or a
        // whole one, never half of one.
        try FileManager.default.removeItem(atPath: keyPath)
        try FileManager.default.removeItem(atPath: publicPath)
        for delay in [0, 3, 6, 9, 12, 15, 20, 30] {
            let daemon = try await DaemonHarness(reusing: folder, clientKeys: keys, settings: settings, waitUntilListening: false)
            try await Task.sleep(for: .milliseconds(delay))
            daemon.kill9()
            print("crash-restart first start killed after \(delay) ms: key \(FileManager.default.fileExists(atPath: keyPath) ? "made" : "not made yet")")
            if FileManager.default.fileExists(atPath: keyPath) {
                #expect(throws: Never.self, "a killed first start left a broken key") { try CurveKeyFile.readKeyPair(keyPath) }
            }
        }

        // Normal operation from here on: the key, the allow-list and the catalog must survive.
        let started = try await DaemonHarness(reusing: folder, clientKeys: keys, settings: settings)
        let serverKey = try #require(started.serverPublicKey)
        let protected = try [keyPath, started.allowListURL.path, state.appendingPathComponent("catalogs/show.earcat").path]
            .map { ($0, try Data(contentsOf: URL(fileURLWithPath: $0))) }
        let load = try LoadClients(rpc: started.rpcEndpoint, events: started.eventsEndpoint,
                                   operator: try #require(started.security(.operator)), viewer: try #require(started.security(.viewer)))
        defer { load.stop() }
        started.kill9()

        for cycle in 0..<9 {
            let moment = ["starting up", "serving", "re-reading its allow-list"][cycle % 3]
            let daemon = try await DaemonHarness(reusing: folder, clientKeys: keys, settings: settings,
                                           waitUntilListening: moment != "starting up")
            switch moment {
            case "starting up":
                try await Task.sleep(for: .microseconds(Int.random(in: 0...150_000)))
            default:
                // Killed only once this daemon has served the load.
                do {
                    try await load.waitForSuccess(after: load.successes)
                } catch {
                    Issue.record("cycle \(cycle): the load got no answer from the restarted daemon (\(error)); log:\n\(daemon.log)")
                }
                if moment == "serving" {
                    try await Task.sleep(for: .microseconds(Int.random(in: 0...800_000)))
                } else {
                    kill(daemon.process.processIdentifier, SIGHUP)
                    try await Task.sleep(for: .microseconds(Int.random(in: 0...5_000)))
                }
            }
            let answers = load.successes
            daemon.kill9()
            print("crash-restart cycle \(cycle): killed while \(moment), \(answers) answers so far, it had \(daemon.log.contains("listening on") ? "" : "not ")bound its sockets")
            for (path, bytes) in protected {
                #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == bytes, "cycle \(cycle) (\(moment)): \(path) changed")
            }
        }

        // The daemon after the last kill serves as before.
        let final = try await DaemonHarness(reusing: folder, clientKeys: keys, settings: settings)
        #expect(final.serverPublicKey == serverKey)
        #expect(try CurveKeyFile.readKeyPair(keyPath).publicKey == serverKey)
        let mode = try FileManager.default.attributesOfItem(atPath: keyPath)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(!final.log.contains("left out"), "a catalog was refused: \(final.log)")
        for folder in [state, state.appendingPathComponent("catalogs")] {
            let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            #expect(!names.contains { $0.contains(".tmp-") }, "interrupted writes left \(names)")
        }
        try await load.waitForSuccess(after: load.successes)  // the long-lived clients reconnected

        let client = try final.client(.operator)
        defer { client.close() }
        let result = try await client.call(Methods.Recognizer.match, Earshot_V1_MatchRequest(), timeout: .seconds(60))
        #expect(result.outcome == .match)
        #expect(result.items.first?.mediaItem.id == "piece1")
        let viewer = try final.client(.viewer)
        defer { viewer.close() }
        do {
            _ = try await viewer.call(Methods.Recognizer.prepare, Earshot_V1_PrepareRequest())
            Issue.record("the allow-list's roles were lost: a viewer prepared")
        } catch {
            #expect(error.code == .permissionDenied)
        }
        // The dashboard that subscribed before the first kill hears the last daemon.
        let snapshot = try await viewer.call(Methods.Session.getSnapshot, Earshot_V1_GetSnapshotRequest())
        try await load.waitForEvent(epoch: snapshot.epoch)
        #expect(final.stop() == 0)
    }
}

/// Operator and viewer clients that keep calling (Match, GetSnapshot, StreamMatches) and a
/// dashboard that keeps listening, whatever happens to the daemon, counting answers.
private final class LoadClients: Sendable {
    private let clients: [RpcClient]
    private let subscriber: EventSubscriber
    private let tasks = Locked<[Task<Void, Never>]>([])
    private let heard = Heard()

    /// What the load heard back (a class: the tasks share it).
    private final class Heard: Sendable {
        let answers = Atomic<Int>(0)
        let epochs = Locked<Set<UInt64>>([])
        func answered() { answers.add(1, ordering: .relaxed) }
    }

    var successes: Int { heard.answers.load(ordering: .relaxed) }

    init(rpc: String, events: String, operator: ClientSecurity, viewer: ClientSecurity) throws {
        func client(_ security: ClientSecurity) throws -> RpcClient {
            var configuration = RpcClient.Configuration()
            configuration.security = security
            return try RpcClient(endpoint: rpc, configuration: configuration)
        }
        let matchers = [try client(`operator`), try client(`operator`)]
        let watcher = try client(viewer), streamer = try client(`operator`)
        clients = matchers + [watcher, streamer]
        subscriber = try EventSubscriber(endpoint: events, topics: [""], security: viewer)
        var started: [Task<Void, Never>] = []
        for matcher in matchers {
            started.append(repeating { [heard] in
                _ = try await matcher.call(Methods.Recognizer.match, Earshot_V1_MatchRequest(), timeout: .seconds(5))
                heard.answered()
            })
        }
        started.append(repeating { [heard] in
            _ = try await watcher.call(Methods.Session.getSnapshot, Earshot_V1_GetSnapshotRequest(), timeout: .seconds(2))
            heard.answered()
            try await Task.sleep(for: .milliseconds(20))
        })
        started.append(repeating { [heard] in
            for try await _ in streamer.stream(Methods.Recognizer.streamMatches, Earshot_V1_StreamMatchesRequest(), timeout: .seconds(30)) {
                heard.answered()
            }
        })
        let (subscriber, heard) = (self.subscriber, self.heard)
        started.append(Task.detached {
            for await event in subscriber.events { _ = heard.epochs.withLock { $0.insert(event.epoch) } }
        })
        tasks.withLock { $0 = started }
    }

    /// Runs `body` again and again until stopped; a failure (the daemon is gone) waits a little.
    private func repeating(_ body: @escaping @Sendable () async throws -> Void) -> Task<Void, Never> {
        Task.detached {
            while !Task.isCancelled {
                do { try await body() } catch { try? await Task.sleep(for: .milliseconds(100)) }
            }
        }
    }

    /// Waits (up to 60 s) for an answer beyond `count`.
    func waitForSuccess(after count: Int) async throws {
        try await eventually("the load gets an answer", every: .milliseconds(50)) { self.successes > count }
    }

    /// Waits (up to 60 s) for an event of the daemon started with `epoch`.
    func waitForEvent(epoch: UInt64) async throws {
        try await eventually("the subscriber hears the daemon started with epoch \(epoch)", every: .milliseconds(50)) {
            self.heard.epochs.withLock { $0.contains(epoch) }
        }
    }

    func stop() {
        for task in tasks.withLock({ $0 }) { task.cancel() }
        clients.forEach { $0.close() }
        subscriber.close()
    }
}

/// A TCP port on 127.0.0.1 that was free a moment ago (the kernel's pick for port 0).
func freeLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw HarnessError("socket: \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
        }
    }
    guard bound else { throw HarnessError("bind: \(String(cString: strerror(errno)))") }
    return Int(UInt16(bigEndian: address.sin_port))
}
