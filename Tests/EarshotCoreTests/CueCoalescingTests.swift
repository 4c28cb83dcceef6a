import Testing

@testable import EarshotCore

/// Cues crossed in one step are reported as one event with a count; a few still each their own.
struct CueCoalescingTests {
    static let show = CueMonitorTests.show

    static func total(_ events: [CueEvent], _ kind: CueEvent.Kind) -> Int {
        events.filter { $0.kind == kind }.reduce(0) { $0 + $1.count }
    }

    @Test func aLongJumpIsOneSkippedWithTheCountAndTheOwedCue() {
        var monitor = CueMonitor()
        var cues = (0..<50).map { Cue(id: "c\($0)", start: 30 + Double($0)) }
        cues[20].restrictions = [.jump]
        cues[40].restrictions = [.jump]
        let schedule = CueMonitorTests.schedule(cues + [Cue(id: "inside", start: 95, duration: 10)])
        let observations = CueMonitorTests.Playback(from: 5, to: 20, position: 5).observations()
            + CueMonitorTests.Playback(from: 21, to: 30, position: 100).observations()
        let events = CueMonitorTests.run(&monitor, observations, until: 30, schedules: [Self.show: schedule])
        let skipped = events.filter { $0.kind == .skipped }
        #expect(skipped.count == 1)
        #expect(skipped.first?.count == 50)
        // The owed cue is the one reported: the last JUMP-restricted one.
        #expect(skipped.first?.cue?.id == "c40")
        #expect(skipped.first?.owed == true)
        // What was not crossed whole is reported as before: the seek, and the cue landed inside.
        #expect(events.filter { $0.kind == .seek }.count == 1)
        #expect(CueMonitorTests.kinds(events, .started) == ["inside"])
    }

    @Test func aJumpOverAFewCuesStillReportsEach() {
        var monitor = CueMonitor()
        let schedule = CueMonitorTests.schedule((0..<CueCoalescing.most).map { Cue(id: "c\($0)", start: 30 + Double($0)) })
        let observations = CueMonitorTests.Playback(from: 5, to: 20, position: 5).observations()
            + CueMonitorTests.Playback(from: 21, to: 30, position: 100).observations()
        let events = CueMonitorTests.run(&monitor, observations, until: 30, schedules: [Self.show: schedule])
        #expect(CueMonitorTests.kinds(events, .skipped) == (0..<CueCoalescing.most).map { "c\($0)" })
        #expect(events.allSatisfy { $0.count == 1 })
    }

    @Test func aDenseScheduleCrossedInOneStepIsOneEventPerKind() {
        var monitor = CueMonitor()
        // 200 cues of 10 ms every 50 ms from 20 s; the monitor is advanced only once a second, as
        // a daemon too busy to wake at every cue point would.
        let cues = (0..<200).map { Cue(id: "d\($0)", start: 20 + 0.05 * Double($0), duration: 0.01) }
        let schedule = CueMonitorTests.schedule(cues)
        var events: [CueEvent] = []
        var steps = 0
        for t in stride(from: 10.0, through: 32, by: 1) {
            let o = CueMonitor.Observation(programme: Self.show, position: t, rate: 1, confidence: 0.95, time: t, wallTime: 1_000_000 + t)
            let step = monitor.observe(o, schedule: schedule)
            #expect(step.count <= 8, "one step reported \(step.count) events")
            events += step
            steps += 1
        }
        // Every cue is accounted for, in far fewer events than cues.
        #expect(Self.total(events, .skipped) + Self.total(events, .started) == 200)
        #expect(Self.total(events, .upcoming) == 200)
        #expect(events.count < 3 * steps + 4)
        #expect(events.contains { $0.kind == .skipped && $0.count > CueCoalescing.most })
    }

    @Test func aScheduleDenserThanAnyProgrammeIsCrossedInPacedSteps() {
        var monitor = CueMonitor()
        // 1,000 cues of 5 ms every 10 ms from 20 s, the monitor advanced at every deadline it asks for.
        let cues = (0..<1_000).map { Cue(id: "d\($0)", start: 20 + 0.01 * Double($0), duration: 0.005) }
        let observations = CueMonitorTests.Playback(from: 10, to: 32, position: 10).observations()
        let events = CueMonitorTests.run(&monitor, observations, until: 32, schedules: [Self.show: CueMonitorTests.schedule(cues)])
        #expect(Self.total(events, .skipped) + Self.total(events, .started) == 1_000)
        // About 20 steps a second, a few events each: far fewer than 3 events a cue.
        #expect(events.count < 600, "\(events.count) events for 1,000 cues")
    }

    @Test func coalescingKeepsOrderAndLeavesOtherKindsAlone() {
        let p = Self.show
        func e(_ kind: CueEvent.Kind, _ id: String?, owed: Bool = false) -> CueEvent {
            CueEvent(kind: kind, programme: p, cue: id.map { Cue(id: $0, start: 1) }, time: 1, position: 1, owed: owed)
        }
        var events = [e(.seek, nil)]
        events += (0..<6).map { e(.upcoming, "u\($0)") }
        events += [e(.started, "s"), e(.ended, "s")]
        events += (0..<4).map { e(.skipped, "k\($0)", owed: $0 == 1) }
        events += [e(.started, "current")]
        let out = CueCoalescing.coalesce(events)
        #expect(out.map(\.kind) == [.seek, .upcoming, .skipped, .started])
        #expect(out[1].cue?.id == "u5" && out[1].count == 6)
        // "s" was crossed whole: with the four skipped, five crossed cues, one SKIPPED; "k1" owed.
        #expect(out[2].count == 5 && out[2].cue?.id == "k1" && out[2].owed)
        #expect(out[3].cue?.id == "current" && out[3].count == 1)
        // Four or fewer of a kind pass unchanged.
        let few = Array(events[0..<5])
        #expect(CueCoalescing.coalesce(few) == few)
    }

    @Test func limitsRefuseTooManyCuesOrTooMuchText() {
        let many = (0...CueLimits.cuesPerReference).map { Cue(id: "c\($0)", start: 0) }
        #expect(throws: EarshotError.catalogInvalid(
            "\(CueLimits.cuesPerReference + 1) cues for one reference; at most \(CueLimits.cuesPerReference) are allowed")) {
            try CueSchedule(many, referenceDuration: 60)
        }
        #expect((try? CueSchedule(Array(many.dropLast()), referenceDuration: 60)) != nil)
        let big = Cue(id: "big", start: 0, attributes: ["X-COM-TEXT": CueAttribute(.quotedString, String(repeating: "a", count: CueLimits.attributeBytesPerCue))])
        #expect(throws: EarshotError.self) { try CueSchedule([big], referenceDuration: 60) }
        // Each cue within its limit, the set past its own.
        let each = CueLimits.attributeBytesPerCue - 16
        let heavy = (0..<(CueLimits.attributeBytesPerSet / each + 1)).map {
            Cue(id: "h\($0)", start: 0, attributes: ["X-COM-T": CueAttribute(.quotedString, String(repeating: "a", count: each))])
        }
        do throws(EarshotError) {
            _ = try CueSchedule(heavy, referenceDuration: 60)
            Issue.record("a set past \(CueLimits.attributeBytesPerSet) bytes was accepted")
        } catch {
            #expect(error.message.contains("at most \(CueLimits.attributeBytesPerSet)"))
        }
    }
}
