import EarshotSync
import EarshotTestSupport
import EarshotWire
import Foundation
import Testing

@testable import EarshotTransport

/// One key's library watches, at the most its limits allow, against another owner's reads,
/// through a real earshotd over CURVE.
@Suite("earshotd library fairness", .serialized)
struct DaemonLibraryFairnessTests {
    /// What one viewer connection heard: per request id, when its first reply came, its stream
    /// items' payloads, and its END if one came.
    struct Heard: Sendable {
        var first: [UInt64: Duration] = [:]
        var items: [UInt64: [Data]] = [:]
        var ends: [UInt64: Earshot_V1_Status] = [:]
    }

    static let backlogChanges = 20
    static let itemsPerChange = 1000

    /// A viewer with 20 000 items opens 80 WatchLibrary streams from version 0 (16 on each of 5
    /// connections: 64 are let in); meanwhile the operator reads one item at a time. Every read
    /// of the operator is answered, its p99 within max(4 × its idle p99, 500 ms), and every
    /// admitted stream still gets each change once, in order, with all its items, then CURRENT.
    /// The viewer's pace is raised out of the way: this is the read queue's fairness alone.
    @Test func oneKeysCatchUpWatchesLeaveAnotherOwnersReadsTheirLatency() async throws {
        let daemon = try await DaemonHarness(settings: ["--session.prepare_on_start=false", "--session.follow=false",
                                                  "--library.catch_up_bytes_per_second=\(1 << 40)"])
        defer { daemon.stop() }
        let viewer = try daemon.client(.viewer), op = try daemon.client(.operator)
        defer { [viewer, op].forEach { $0.close() } }
        var added: [[String]] = []
        for batch in 0..<Self.backlogChanges {  // 1000 items: the most one Add takes
            let reply = try await Lib.add(viewer, (0..<Self.itemsPerChange).map { Lib.new(title: "item \(batch).\($0)") }, timeout: .seconds(120))
            added.append(reply.items.map(\.id))
        }
        _ = try await Lib.add(op, [Lib.new(title: "the operator's")])

        var request = Earshot_V1_LibraryItemsRequest()
        request.pageSize = 1
        let pageRequest = request
        /// One Items call of the operator: how long it took, nil if it failed or took over 5 s.
        func timedRead() async -> Duration? {
            let start = ContinuousClock.now
            guard let page = try? await op.call(Methods.Library.items, pageRequest, timeout: .seconds(5)), page.items.count == 1 else { return nil }
            return ContinuousClock.now - start
        }
        var idle: [Duration] = []
        for _ in 0..<40 {
            if let t = await timedRead() { idle.append(t) }
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(idle.count == 40, "the operator's reads failed with nobody else about")
        let idleP99 = Self.percentile(idle, 99)

        // The attack: 5 connections × 16 watches from version 0.
        let started = ContinuousClock.now
        let finished = Locked(0)  // streams that got the whole backlog and CURRENT, or ended
        let connections = 5, perConnection = 16
        let dealers = try (0..<connections).map { c in try Self.watches(perConnection, daemon, firstID: c * perConnection + 1) }
        let listeners = dealers.map { dealer in
            Task.detached { try await Self.listen(dealer, streams: perConnection, since: started, finished: finished) }
        }

        // The operator reads while the viewer's streams catch up.
        var underAttack: [Duration] = []
        var failed = 0
        while finished.withLock({ $0 }) < connections * perConnection, ContinuousClock.now - started < .seconds(300) {
            if let t = await timedRead() { underAttack.append(t) } else { failed += 1 }
            try await Task.sleep(for: .milliseconds(10))
        }
        let attack = ContinuousClock.now - started
        var heard = Heard()
        for listener in listeners {
            let h = try await listener.value
            heard.first.merge(h.first) { a, _ in a }
            heard.items.merge(h.items) { a, _ in a }
            heard.ends.merge(h.ends) { a, _ in a }
        }
        for dealer in dealers { dealer.socket.close() }

        let bound = max(idleP99 * 4, .milliseconds(500))
        let p99 = Self.percentile(underAttack + Array(repeating: .seconds(5), count: failed), 99)
        let firstReplies = heard.first.values.sorted()
        print("""
            library fairness: operator Items p50/p99 idle \(Self.ms(Self.percentile(idle, 50)))/\(Self.ms(idleP99)) ms, \
            under the attack \(Self.ms(Self.percentile(underAttack, 50)))/\(Self.ms(p99)) ms (\(underAttack.count) answered, \(failed) not); \
            viewer's first replies p50 \(Self.ms(firstReplies.isEmpty ? .zero : firstReplies[firstReplies.count / 2])) ms, \
            last \(Self.ms(firstReplies.last ?? .zero)) ms; all caught up in \(Self.ms(attack)) ms
            """)
        #expect(failed == 0, "\(failed) of the operator's reads got no answer within 5 s")
        #expect(underAttack.count >= 5, "only \(underAttack.count) reads while the viewer's streams caught up")
        #expect(p99 <= bound, "the operator's p99 under the attack is \(p99), over max(4 × idle p99 \(idleP99), 500 ms)")

        // The limits held: 64 streams in, 16 refused.
        let refused = heard.ends.values.filter { $0.code == RpcStatusCode.resourceExhausted.rawValue }
        #expect(refused.count == connections * perConnection - 64)
        let admitted = heard.items.filter { !$0.value.isEmpty }
        #expect(admitted.count == 64)
        // Exactly once and in order, each change whole, then CURRENT at the last version.
        let all = Set(added.joined())
        for (id, payloads) in admitted {
            let changes = try payloads.map { try Earshot_V1_LibraryChange(serializedBytes: $0) }
            #expect(changes.map(\.kind) == Array(repeating: .added, count: Self.backlogChanges) + [.current], "stream \(id)")
            #expect(changes.map(\.version) == (1...UInt64(Self.backlogChanges)).map { $0 } + [UInt64(Self.backlogChanges)], "stream \(id)")
            for (change, ids) in zip(changes, added) {
                #expect(change.itemIds == ids && change.items.map(\.id) == ids, "stream \(id), version \(change.version)")
            }
            #expect(Set(changes.flatMap(\.items).map(\.id)) == all)
            #expect(heard.ends[id] == nil, "stream \(id) ended: \(String(describing: heard.ends[id]))")
        }
        #expect(daemon.stop() == 0)
    }

    /// The same attack under a pace of 256 KiB/s: what the viewer's 64 streams read together in
    /// 6 s stays within its pace (its burst, 6 s of pace and the reads under way) while
    /// another owner's own watch catches up at once; once they are gone the viewer's one watch
    /// gets its whole backlog, paced; and earshotd stops promptly with streams waiting their turn.
    @Test func oneKeysWatchesTogetherReadNoFasterThanItsPace() async throws {
        let pace = 256 << 10
        let daemon = try await DaemonHarness(settings: ["--session.prepare_on_start=false", "--session.follow=false",
                                                  "--library.catch_up_bytes_per_second=\(pace)"])
        defer { daemon.stop() }
        let viewer = try daemon.client(.viewer), op = try daemon.client(.operator)
        defer { [viewer, op].forEach { $0.close() } }
        for batch in 0..<4 {
            _ = try await Lib.add(viewer, (0..<Self.itemsPerChange).map { Lib.new(title: "item \(batch).\($0)") }, timeout: .seconds(120))
        }
        _ = try await Lib.add(op, [Lib.new(title: "the operator's")])

        let started = ContinuousClock.now
        let connections = 5, perConnection = 16
        let dealers = try (0..<connections).map { c in try Self.watches(perConnection, daemon, firstID: c * perConnection + 1) }
        let window = Duration.seconds(6)
        let listeners = dealers.map { dealer in
            Task.detached { () throws -> (bytes: Int, refused: Int, otherEnds: Int) in
                var bytes = 0, refused = 0, otherEnds = 0
                while ContinuousClock.now - started < window {
                    guard let message = try dealer.socket.receive(), message.frames.count == 2 else {
                        try await Task.sleep(for: .milliseconds(1))
                        continue
                    }
                    let reply = try Earshot_V1_ResponseEnvelope(serializedBytes: message.frames[1])
                    if reply.kind == .message { bytes += reply.payload.count }
                    if reply.kind == .end {
                        if reply.status.code == RpcStatusCode.resourceExhausted.rawValue { refused += 1 } else { otherEnds += 1 }
                    }
                }
                return (bytes, refused, otherEnds)
            }
        }

        // The operator's own watch, meanwhile: its backlog (one item) and CURRENT come at once.
        let watchStart = ContinuousClock.now
        var changes = Lib.watch(op, from: 0).makeAsyncIterator()
        let caughtUp = try await Lib.untilCurrent(&changes)
        let opWatch = ContinuousClock.now - watchStart
        #expect(caughtUp.map(\.kind) == [.added, .current])
        #expect(opWatch < .seconds(3), "another owner's watch took \(opWatch) to catch up")

        var bytes = 0, refused = 0, otherEnds = 0
        for listener in listeners {
            let heard = try await listener.value
            bytes += heard.bytes
            refused += heard.refused
            otherEnds += heard.otherEnds
        }
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        // The pace counts more than the bytes sent (each item's lookup too); the reads under way
        // are at most the pool's two connections' worth, 256 KiB each.
        let allowed = Int(Double(pace) * (seconds + 0.5)) + 2 * (256 << 10)
        print("library pace: the viewer's 64 streams read \(bytes) bytes in \(Self.ms(elapsed)) ms (at most \(allowed)); the operator's watch caught up in \(Self.ms(opWatch)) ms")
        #expect(refused == connections * perConnection - 64, "the limits let \(connections * perConnection - refused) streams in")
        #expect(otherEnds == 0)
        #expect(bytes <= allowed, "the viewer's streams read \(bytes) bytes in \(elapsed), past their pace (\(allowed))")

        // The viewer gives up its streams (what they had booked is given back) and watches once:
        // the whole backlog comes, in order, paced (4000 items cost over 1 MB; 128 KiB is burst).
        for dealer in dealers { dealer.socket.close() }
        try await Task.sleep(for: .seconds(1))  // the bookings are given back: nothing outside tells when
        let alone = ContinuousClock.now
        var viewerChanges = Lib.watch(viewer, from: 0).makeAsyncIterator()
        let backlog = try await Lib.untilCurrent(&viewerChanges)
        let catchUp = ContinuousClock.now - alone
        print("library pace: one watch of the viewer's caught up in \(Self.ms(catchUp)) ms")
        #expect(backlog.map(\.kind) == [.added, .added, .added, .added, .current])
        #expect(backlog.map(\.version) == [1, 2, 3, 4, 4])
        #expect(backlog.dropLast().allSatisfy { $0.items.count == Self.itemsPerChange && $0.itemIds == $0.items.map(\.id) })
        #expect(catchUp > .seconds(1), "one watch read its 4000 items in \(catchUp): not paced")
        #expect(catchUp < .seconds(30), "one watch took \(catchUp) to catch up: the attack's bookings were not given back")

        // earshotd stops at once with streams waiting for their turn.
        let waiting = try Self.watches(16, daemon)
        defer { waiting.socket.close() }
        try await eventually("the 16 watches wait for their turn", every: .milliseconds(50)) { try await Self.inFlight(daemon) >= 16 }
        let stopping = ContinuousClock.now
        #expect(daemon.stop() == 0)
        #expect(ContinuousClock.now - stopping < .seconds(5), "earshotd took \(ContinuousClock.now - stopping) to stop")
    }

    /// A new connection of the viewer's with `count` WatchLibrary calls from version 0, their
    /// request ids from `firstID` on.
    /// The calls in flight in the daemon (the asking one included).
    static func inFlight(_ daemon: DaemonHarness) async throws -> UInt64 {
        let admin = try daemon.client(.admin)
        defer { admin.close() }
        return try await admin.call(Methods.Health.getStats, Earshot_V1_GetStatsRequest()).counters["rpc_in_flight", default: 0]
    }

    static func watches(_ count: Int, _ daemon: DaemonHarness, firstID: Int = 1) throws -> RawCurveDealer {
        var watch = Earshot_V1_WatchLibraryRequest()
        watch.fromVersion = 0
        let payload: [UInt8] = try watch.serializedBytes()
        let dealer = try RawCurveDealer(daemon.rpcEndpoint, security: daemon.security(.viewer))
        for i in 0..<count {
            #expect(dealer.send(try RawCurveDealer.envelope(UInt64(firstID + i), Methods.Library.watchLibrary.path, payload: payload, timeoutMs: 300_000)))
        }
        return dealer
    }

    /// Reads `dealer`'s replies until each of its `streams` calls has ended or sent the backlog
    /// and CURRENT (counted in `finished`), keeping the payloads to check afterwards.
    static func listen(_ dealer: RawCurveDealer, streams: Int, since start: ContinuousClock.Instant, finished: Locked<Int>) async throws -> Heard {
        var heard = Heard()
        var done = Set<UInt64>()
        while done.count < streams, ContinuousClock.now - start < .seconds(300) {
            guard let message = try dealer.socket.receive(), message.frames.count == 2 else {
                try await Task.sleep(for: .milliseconds(1))
                continue
            }
            let reply = try Earshot_V1_ResponseEnvelope(serializedBytes: message.frames[1])
            let id = reply.requestID
            if heard.first[id] == nil { heard.first[id] = ContinuousClock.now - start }
            var ended = false
            if reply.kind == .end {
                heard.ends[id] = reply.status
                ended = true
            } else if reply.kind == .message {
                heard.items[id, default: []].append(reply.payload)
                ended = heard.items[id]!.count == backlogChanges + 1
            }
            if ended, done.insert(id).inserted {
                finished.withLock { $0 += 1 }
            }
        }
        return heard
    }

    static func percentile(_ values: [Duration], _ p: Int) -> Duration {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return .zero }
        return sorted[min(sorted.count - 1, max(0, (sorted.count * p + 99) / 100 - 1))]
    }

    static func ms(_ d: Duration) -> String {
        String(Int((Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15).rounded()))
    }
}
