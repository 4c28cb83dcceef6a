import EarshotCore
import EarshotSync
import EarshotTransport
import EarshotWire
import Foundation
import Testing

/// Cues end to end: a controller sets cues on the programme over RPC, the real daemon follows the
/// programme file it plays in real time, and a StreamCues client and a cue/ subscriber see the
/// events on time and in order.
@Suite("earshotd cues") struct DaemonCueTests {
    /// The fixture programme plays piece 1 from 10 s for 40 s, looping: reference position 10 + t,
    /// and every 40 s a jump back to 10.
    static func cue(_ id: String, _ start: Double, duration: Double? = nil, flags: [String] = []) -> Earshot_V1_Cue {
        var c = Earshot_V1_Cue()
        c.id = id
        c.cueClass = "com.example.card"
        c.start = start
        if let duration { c.duration = duration }
        c.flags = flags
        return c
    }

    @Test func cuesFireInSyncThroughTheRealDaemon() async throws {
        let daemon = try DaemonHarness()
        defer { daemon.stop() }
        let operatorClient = try daemon.client(.operator)
        let viewer = try daemon.client(.viewer)
        defer {
            operatorClient.close()
            viewer.close()
        }
        var reference = Earshot_V1_CueScheduleRequest()
        reference.mediaItemID = "piece1"

        // A viewer is not the controller; a cue outside the 60 s reference is refused whole.
        var set = Earshot_V1_SetCuesRequest()
        set.reference = reference
        set.cues = [Self.cue("early", 17), Self.cue("range", 21, duration: 2), Self.cue("quiz", 25, flags: ["ONCE"])]
        await expectCode(.permissionDenied) { () throws(RpcError) in _ = try await viewer.call(Methods.Cues.setCues, set) }
        var bad = set
        bad.cues.append(Self.cue("late", 75))
        await expectCode(.invalidArgument) { () throws(RpcError) in _ = try await operatorClient.call(Methods.Cues.setCues, bad) }
        #expect(try await viewer.call(Methods.Cues.getSchedule, reference).cues.isEmpty)

        let events = Locked<[(Earshot_V1_CueEvent, ContinuousClock.Instant)]>([])
        let stream = viewer.stream(Methods.Cues.streamCues, Earshot_V1_StreamCuesRequest(), timeout: .seconds(600))
        let reader = Task {
            do { for try await e in stream { events.withLock { $0.append((e, .now)) } } } catch {}
        }
        defer { reader.cancel() }
        let subscriber = try EventSubscriber(endpoint: daemon.eventsEndpoint, topics: [Topics.cue], security: daemon.security(.viewer))
        let published = Locked<[Earshot_V1_CueEvent]>([])
        let listener = Task {
            for await e in subscriber.events { if case .cue(let c) = e.body { published.withLock { $0.append(c) } } }
        }
        defer { listener.cancel() }

        let schedule = try await operatorClient.call(Methods.Cues.setCues, set)
        #expect(schedule.source == .controller)
        #expect(schedule.cues.map(\.id) == ["early", "range", "quiz"])
        #expect(schedule.cues[1].end == 23)
        #expect(try await viewer.call(Methods.Cues.getSchedule, reference).cues.count == 3)

        // Through the first pass (to 50 s) and into the second (the loop jumps back to 10 s).
        func started(_ id: String) -> [ContinuousClock.Instant] {
            events.withLock { $0.filter { $0.0.kind == .started && $0.0.cue.id == id }.map(\.1) }
        }
        let deadline = ContinuousClock.now + .seconds(75)
        while ContinuousClock.now < deadline, started("range").count < 2 { try await Task.sleep(for: .milliseconds(100)) }

        let got = events.withLock { $0 }
        #expect(got.first?.0.kind == .state)
        #expect(got.contains { $0.0.kind == .schedule && $0.0.schedule.programme.title == "Piece 1" })
        // Each pass starts each cue once; ONCE only in the first pass; the loop is a seek.
        #expect(started("early").count == 2)
        #expect(started("range").count == 2)
        #expect(started("quiz").count == 1)
        #expect(got.contains { $0.0.kind == .seek })
        // In sync: the programme runs at its own speed, so starts are as far apart as the cues
        // (4 s between "early" and "range") and UPCOMING leads by 5 s.
        let early = started("early"), range = started("range")
        if early.count == 2, range.count == 2 {
            for pass in 0..<2 {
                let gap = Double((range[pass] - early[pass]) / .milliseconds(1)) / 1000
                #expect(abs(gap - 4) < 0.25, "pass \(pass): \(gap) s between the starts of cues 4 s apart")
            }
        }
        if let up = got.first(where: { $0.0.kind == .upcoming && $0.0.cue.id == "quiz" }), let quiz = started("quiz").first {
            #expect(abs(Double((quiz - up.1) / .milliseconds(1)) / 1000 - 5) < 0.25 || up.0.latenessSeconds > 0)
        }
        let endedRange = got.filter { $0.0.kind == .ended && $0.0.cue.id == "range" }.count
        #expect(endedRange >= 1)
        // The same events on the cue/ topic.
        let topicStarts = published.withLock { $0.filter { $0.kind == .started }.map(\.cue.id) }
        #expect(Array(topicStarts.prefix(3)) == ["early", "range", "quiz"])

        // A late joiner's snapshot knows the programme; ClearCues goes back to the catalog's (none).
        let snapshot = try await viewer.call(Methods.Session.getSnapshot, Earshot_V1_GetSnapshotRequest())
        #expect(snapshot.cues.programme.title == "Piece 1")
        #expect(snapshot.cues.phase == .following)
        let cleared = try await operatorClient.call(Methods.Cues.clearCues, reference)
        #expect(cleared.source == .catalog && cleared.cues.isEmpty)
    }
}
