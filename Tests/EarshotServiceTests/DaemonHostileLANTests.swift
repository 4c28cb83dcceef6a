import EarshotSync
import EarshotTestSupport
import EarshotWire
import Foundation
import Testing

@testable import EarshotTransport

/// earshotd as shipped (CURVE on), attacked from the LAN the ways it can be: a
/// flood of connections that never handshake, one key holding every place, envelopes built to
/// be expensive, subscriptions by the ten thousand. Each time the daemon stays up and the
/// well-behaved clients are served.
@Suite("earshotd on a hostile LAN", .serialized)
struct DaemonHostileLANTests {
    private static let quiet = ["--session.follow=false"]

    /// A counter from Health/GetStats (0 when absent).
    private func counter(_ name: String, _ daemon: DaemonHarness) async throws -> UInt64 {
        let client = try daemon.client(.admin)
        defer { client.close() }
        return try await client.call(Methods.Health.getStats, Earshot_V1_GetStatsRequest()).counters[name] ?? 0
    }

    // MARK: 1. Connections that never handshake

    @Test func aConnectionFloodNeverTakesTheDescriptors() async throws {
        // 256 descriptors, as if systemd's 1024 had been hit by 4× the connections.
        let daemon = try await DaemonHarness(settings: Self.quiet, fileLimit: 256)
        #expect(daemon.log.contains("file descriptors: limit 256"))
        // The start line says what an operator can act on, in their words.
        #expect(daemon.log.contains("clients: up to ") && !daemon.log.contains("closing door"), "\(daemon.log)")
        let client = try daemon.client(.operator)
        defer { client.close() }
        _ = try await client.call(Methods.Health.check, Earshot_V1_HealthCheckRequest())

        let flood = try ConnectionFlood(endpoint: daemon.rpcEndpoint, connections: 600)
        var calls = 0, mostDescriptors = 0, slowest = Duration.zero
        let floodEnds = ContinuousClock.now + .seconds(6)
        while ContinuousClock.now < floodEnds {
            // The client that was in is served throughout, back to back.
            let asked = ContinuousClock.now
            let reply = try await client.call(Methods.Health.check, Earshot_V1_HealthCheckRequest(), timeout: .seconds(10))
            slowest = max(slowest, ContinuousClock.now - asked)
            #expect(reply.status == .serving)
            calls += 1
            mostDescriptors = max(mostDescriptors, daemon.openDescriptors)
            #expect(daemon.process.isRunning)
        }
        let opened = flood.opened
        flood.stop()
        #expect(opened > 600, "the flood reopened what the daemon closed")
        // Never stalled behind the flood (a debug daemon beside other tests on 2 cores: a call
        // takes up to a few hundred ms here; the benchmark measures the release build).
        #expect(calls >= 5 && slowest < .seconds(3), "\(calls) calls, the slowest took \(slowest)")
        // Never near the limit: the daemon's own files keep their reserve.
        #expect(mostDescriptors < 256 - 32, "the daemon had \(mostDescriptors) descriptors open")

        // Right after the flood, newcomers get in.
        let newcomer = try daemon.client(.viewer)
        defer { newcomer.close() }
        _ = try await newcomer.call(Methods.Health.check, Earshot_V1_HealthCheckRequest(), timeout: .seconds(20))
        #expect(try await counter("connections_door_closings", daemon) > 0)
        #expect(try await counter("connections_limit", daemon) < 256 - 64)
        // One line for the whole flood (at most one a minute).
        let lines = daemon.log.split(separator: "\n").filter { $0.contains("connection limit reached") }
        #expect(lines.count == 1, "\(lines)")
        #expect(daemon.stop() == 0)
    }

    // MARK: 2. One key holding every place

    @Test func oneKeyCannotTakeTheDaemonAndWhatItLeavesBehindIsFreed() async throws {
        let daemon = try await DaemonHarness(settings: Self.quiet)
        // A viewer opens 17 × 16 Health/Watch streams with deadlines near 2³² ms…
        let watch = try Earshot_V1_HealthCheckRequest().serializedBytes() as [UInt8]
        var dealers: [RawCurveDealer] = []
        for c in 0..<17 {
            let dealer = try RawCurveDealer(daemon.rpcEndpoint, security: daemon.security(.viewer))
            for i in 0..<16 {
                #expect(dealer.send(try RawCurveDealer.envelope(UInt64(c * 16 + i + 1), Methods.Health.watch.path,
                                                                  payload: watch, timeoutMs: UInt32.max - 1)))
            }
            dealers.append(dealer)
        }
        var admitted = 0, refused = 0
        for dealer in dealers {
            for _ in 0..<16 {
                let reply = try #require(try await dealer.receive(timeout: .seconds(30)))
                if reply.kind == .message { admitted += 1 }
                if reply.kind == .end {
                    #expect(reply.status.code == RpcStatusCode.resourceExhausted.rawValue)
                    #expect(reply.status.message.contains("per client"), "\(reply.status.message)")
                    refused += 1
                }
            }
        }
        // …and gets its fair share, not the daemon: the others are served meanwhile.
        #expect(admitted == 64)
        #expect(refused == 17 * 16 - 64)
        let operatorClient = try daemon.client(.operator)
        defer { operatorClient.close() }
        for _ in 0..<5 {
            let result = try await operatorClient.call(Methods.Recognizer.match, Earshot_V1_MatchRequest(), timeout: .seconds(30))
            #expect(result.outcome == .match || result.outcome == .noMatch)
        }
        #expect(try await counter("rpc_in_flight", daemon) >= 64)

        // The viewer leaves without a CANCEL: its streams end with its connections, not in 24 h.
        for dealer in dealers { dealer.socket.close() }
        dealers.removeAll()
        try await eventually("the calls of closed connections end", within: .seconds(10), every: .milliseconds(50)) {
            try await counter("rpc_in_flight", daemon) <= 1
        }
        #expect(try await counter("rpc_disconnects", daemon) >= 17)
        #expect(daemon.stop() == 0)
    }

    @Test func aRevokedKeysStreamsEndWithinSeconds() async throws {
        let daemon = try await DaemonHarness(settings: Self.quiet)
        let viewer = try daemon.client(.viewer)
        defer { viewer.close() }
        let ending = Locked<Result<Int, any Error>?>(nil)
        let stream = Task {
            var statuses = 0
            do {
                for try await _ in viewer.stream(Methods.Health.watch, Earshot_V1_HealthCheckRequest(), timeout: .seconds(86_400)) {
                    statuses += 1
                }
                ending.withLock { $0 = .success(statuses) }
            } catch {
                ending.withLock { $0 = .failure(error) }
            }
        }
        defer { stream.cancel() }
        try await eventually("two calls in flight", within: .seconds(10), every: .milliseconds(50)) { try await counter("rpc_in_flight", daemon) >= 2 }
        // The viewer's line leaves the allow-list (the daemon sees the change within a second).
        let keep = try String(contentsOf: daemon.allowListURL, encoding: .utf8)
            .split(separator: "\n").filter { !$0.contains(" viewer viewer") }.joined(separator: "\n") + "\n"
        try keep.write(to: daemon.allowListURL, atomically: true, encoding: .utf8)
        _ = try? await eventually("the stream ends", within: .seconds(10), every: .milliseconds(50)) { ending.withLock { $0 != nil } }
        guard case .failure(let error as RpcError) = ending.withLock({ $0 }) else {
            Issue.record("the stream of a revoked key went on: \(String(describing: ending.withLock { $0 }))")
            return
        }
        #expect(error.code == .unauthenticated)
        try await eventually("one revoked call", within: .seconds(10), every: .milliseconds(50)) { try await counter("rpc_revoked_calls", daemon) == 1 }
        #expect(daemon.stop() == 0)
    }

    // MARK: 3. Envelopes built to be expensive

    @Test func metadataBombsDoNotHoldTheLoop() async throws {
        let daemon = try await DaemonHarness(settings: Self.quiet)
        var bomb = Earshot_V1_RequestEnvelope()
        bomb.method = Methods.Health.check.path
        // 3.9 MB: under the 4 MiB frame limit, so it is not simply cut off by libzmq.
        bomb.metadata = Dictionary(uniqueKeysWithValues: (0..<280_000).map { (String(format: "k%06d", $0), "v") })
        let attackers = try (0..<4).map { _ in try RawCurveDealer(daemon.rpcEndpoint, security: daemon.security(.viewer)) }
        let good = try daemon.client(.operator)
        defer { good.close() }
        _ = try await good.call(Methods.Health.check, Earshot_V1_HealthCheckRequest())

        let perAttacker = 5
        for round in 0..<perAttacker {
            for (a, attacker) in attackers.enumerated() {
                bomb.requestID = UInt64(round * 10 + a + 1)
                let bytes: [UInt8] = try bomb.serializedBytes()
                #expect(bytes.count > 3_500_000)
                #expect(attacker.send(bytes))
            }
        }
        // While the bombs arrive, a good client's calls keep meeting a 1 s deadline (idle they
        // take a few ms; decoding one bomb took the loop most of a second in a release build).
        for _ in 0..<40 {
            let reply = try await good.call(Methods.Health.check, Earshot_V1_HealthCheckRequest(), timeout: .seconds(1))
            #expect(reply.status == .serving)
        }
        // Every bomb was answered, with what is wrong, and none was decoded to find out.
        for attacker in attackers {
            for _ in 0..<perAttacker {
                let reply = try #require(try await attacker.receive(timeout: .seconds(60)))
                #expect(reply.status.code == RpcStatusCode.invalidArgument.rawValue)
                #expect(reply.status.message == "more than 32 metadata entries; at most 32 are allowed")
            }
        }
        #expect(daemon.stop() == 0)
    }

    // MARK: 4. Subscriptions by the ten thousand

    @Test func subscriptionFloodsAreCutOffAndMemoryStays() async throws {
        try await subscriptionFlood(busyProcesses: 0)
    }

    /// The same flood while two busy processes share the daemon's one CPU: the daemon reads the
    /// subscriptions late, so the bound must hold on what it is sent, not on how fast it reads.
    /// (The flooders, in this process, run on the other CPUs.)
    @Test func subscriptionFloodsUnderCPUContentionStayBounded() async throws {
        try await subscriptionFlood(busyProcesses: 2)
    }

    /// The daemon stopped for 2 s while the flood queues up, then let go: its libzmq I/O thread
    /// and its loop read the flood at once on two cores, as on a multi-core board under a fast
    /// flooder. (With heartbeat timers on the daemon's sockets, libzmq also aborts now and then
    /// here: see PeerLiveness.)
    @Test func subscriptionFloodsQueuedWhileTheDaemonStallsStayBounded() async throws {
        try await subscriptionFlood(busyProcesses: 0, stopped: true)
    }

    private func subscriptionFlood(busyProcesses: Int, stopped: Bool = false) async throws {
        let daemon = try await DaemonHarness(settings: Self.quiet, cpus: busyProcesses > 0 ? "0" : nil)
        let dashboard = try EventSubscriber(endpoint: daemon.eventsEndpoint, topics: [Topics.heartbeat], security: daemon.security(.viewer))
        defer { dashboard.close() }
        var beats = dashboard.events.makeAsyncIterator()
        _ = await beats.next()
        try await Task.sleep(for: .seconds(1))
        let before = daemon.residentMegabytes
        let busy = try (0..<busyProcesses).map { _ in
            let p = Process()
            // Spins while this process lives (killed by the test, or ends with it). The signals
            // this process blocks are blocked in its children too: SIGKILL ends it.
            p.executableURL = URL(fileURLWithPath: "/usr/bin/taskset")
            p.arguments = ["-c", "0", "sh", "-c", "while kill -0 $PPID 2>/dev/null; do :; done"]
            try p.run()
            return p
        }
        func stopBusy() {
            for p in busy where p.isRunning { kill(p.processIdentifier, SIGKILL) }
            for p in busy { p.waitUntilExit() }
        }
        defer { stopBusy() }

        // Ten viewer connections each subscribe to 20 000 distinct 200-byte prefixes.
        let flooders = try (0..<10).map { _ in
            let socket = try ZMQSocket(.sub)
            try socket.set(.linger, 0)
            try daemon.security(.viewer)?.apply(to: socket)
            try socket.connect(daemon.eventsEndpoint)
            return socket
        }
        try await Task.sleep(for: .milliseconds(500))
        var most = before
        if stopped { kill(daemon.process.processIdentifier, SIGSTOP) }
        for i in 0..<20_000 {
            for (f, socket) in flooders.enumerated() {
                try socket.set(.subscribe, Array(String(format: "%02d-%06d-", f, i).utf8) + [UInt8](repeating: 0x7A, count: 190))
            }
            // Paced when the daemon has a core to itself, so that the SUB side's own queue does
            // not drop them; as fast as they go when it has to share one.
            if i % 500 == 499 {
                if busyProcesses == 0 { try await Task.sleep(for: .milliseconds(20)) }
                most = max(most, daemon.residentMegabytes)
            }
        }
        if stopped {
            try await Task.sleep(for: .seconds(2))
            kill(daemon.process.processIdentifier, SIGCONT)
        }
        // Each flooder reconnects after it is cut off and sends its whole set again: a few
        // rounds of that.
        for _ in 0..<20 {
            try await Task.sleep(for: .milliseconds(250))
            most = max(most, daemon.residentMegabytes)
        }
        #expect(try await counter("events_subscribers_cut_off", daemon) >= 10)
        stopBusy()
        // The dashboard heard every heartbeat meanwhile.
        #expect(await beats.next() != nil)
        for socket in flooders { socket.close() }
        try await Task.sleep(for: .seconds(3))
        let after = daemon.residentMegabytes
        print("subscription flood with \(busyProcesses) busy processes: RSS \(before) → peak \(most) → \(after) MB")
        #expect(most - before < 20, "RSS \(before) → \(most) MB during the flood")
        #expect(after - before < 10, "RSS \(before) → \(after) MB after it")
        #expect(daemon.process.isRunning)
        #expect(daemon.stop() == 0)
    }
}
