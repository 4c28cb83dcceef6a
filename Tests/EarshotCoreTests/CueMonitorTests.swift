import Testing

@testable import EarshotCore

/// The monitor's rules one by one, driven as the daemon drives it: observations once a second
/// and `advance` at every deadline it asks for.
struct CueMonitorTests {
    static let show = CueProgramme(catalogName: "show", referenceIndex: 0)
    static let other = CueProgramme(catalogName: "show", referenceIndex: 1)

    /// A programme heard from stream time `from` at reference position `position`, playing at `rate`.
    struct Playback {
        var programme = CueMonitorTests.show
        var from: Double
        var to: Double
        var position: Double
        var rate = 1.0
        var confidence = 0.95
        var every = 1.0

        func observations() -> [CueMonitor.Observation] {
            stride(from: from, through: to, by: every).map { t in
                CueMonitor.Observation(programme: programme, position: position + rate * (t - from), rate: rate,
                                       confidence: confidence, time: t, wallTime: 1_000_000 + t)
            }
        }
    }

    /// Feeds `observations` in time order, calls `advance` at each deadline until `until`.
    static func run(_ monitor: inout CueMonitor, _ observations: [CueMonitor.Observation], until: Double,
                    schedules: [CueProgramme: CueSchedule]) -> [CueEvent] {
        var pending = observations.sorted { $0.time < $1.time }[...]
        var events: [CueEvent] = []
        var steps = 0
        while steps < 100_000 {
            steps += 1
            let deadline = monitor.nextDeadline ?? .infinity
            let next = pending.first
            if let o = next, o.time <= deadline {
                guard o.time <= until else { break }
                pending.removeFirst()
                let key = schedules.keys.first { $0.isSame(as: o.programme) } ?? o.programme
                events += monitor.observe(o, schedule: schedules[key] ?? .empty(referenceDuration: 600))
            } else {
                guard deadline <= until else { break }
                events += monitor.advance(to: deadline)
            }
        }
        #expect(steps < 100_000, "the monitor kept asking for deadlines it did not move past")
        return events
    }

    static func schedule(_ cues: [Cue], duration: Double = 600) -> CueSchedule {
        try! CueSchedule(cues, referenceDuration: duration)
    }

    static func kinds(_ events: [CueEvent], _ kind: CueEvent.Kind) -> [String] {
        events.filter { $0.kind == kind }.compactMap { $0.cue?.id }
    }

    @Test func steadyPlaybackAnnouncesStartsAndEndsEachCueOnceOnTime() {
        var monitor = CueMonitor()
        let cues = Self.schedule([
            Cue(id: "a", start: 10), Cue(id: "b", start: 20, duration: 5), Cue(id: "c", start: 40.5, duration: 3),
        ])
        let events = Self.run(&monitor, Playback(from: 3, to: 60, position: 3).observations(), until: 60,
                              schedules: [Self.show: cues])
        #expect(events.first?.kind == .schedule)
        #expect(Self.kinds(events, .upcoming) == ["a", "b", "c"])
        #expect(Self.kinds(events, .started) == ["a", "b", "c"])
        #expect(Self.kinds(events, .ended) == ["b", "c"])  // "a" is a moment
        func time(_ kind: CueEvent.Kind, _ id: String) -> Double? { events.first { $0.kind == kind && $0.cue?.id == id }?.time }
        #expect(abs((time(.upcoming, "a") ?? 0) - 5) < 1e-6)
        #expect(abs((time(.started, "a") ?? 0) - 10) < 1e-6)
        #expect(abs((time(.started, "c") ?? 0) - 40.5) < 1e-6)
        #expect(abs((time(.ended, "c") ?? 0) - 43.5) < 1e-6)
        #expect(events.allSatisfy { $0.lateness < 1e-6 })
        #expect(!events.contains { $0.kind == .skipped || $0.kind == .seek || $0.kind == .programmeLost })
    }

    @Test func aFastProgrammeFiresItsCuesSoonerInStreamTime() {
        var monitor = CueMonitor()
        let cues = Self.schedule([Cue(id: "q", start: 100)])
        // +4 %: position 100 is reached (100 - 10) / 1.04 s after stream time 0.
        let events = Self.run(&monitor, Playback(from: 0, to: 120, position: 10, rate: 1.04).observations(), until: 120,
                              schedules: [Self.show: cues])
        let started = events.first { $0.kind == .started }
        #expect(abs((started?.time ?? 0) - 90 / 1.04) < 0.001)
        let upcoming = events.first { $0.kind == .upcoming }
        // The lead is time on the wall: 5 s before, at the programme's speed.
        #expect(abs((upcoming?.time ?? 0) - (90 / 1.04 - 5)) < 0.001)
    }

    @Test func nothingFiresOnAGuessAndTheProgrammeIsLostAfterTheHorizon() {
        var monitor = CueMonitor()
        let cues = Self.schedule([Cue(id: "near", start: 21.5), Cue(id: "far", start: 23.5), Cue(id: "r", start: 15, duration: 20)])
        // Heard until 20 s, then nothing (the TV was muted).
        let events = Self.run(&monitor, Playback(from: 5, to: 20, position: 5).observations(), until: 60,
                              schedules: [Self.show: cues])
        #expect(Self.kinds(events, .started) == ["r", "near"])  // 21.5 is within 2.5 s of the last confirmation
        let lost = events.filter { $0.kind == .programmeLost }
        #expect(lost.count == 1)
        #expect(abs((lost.first?.time ?? 0) - 30) < 1e-6)
        #expect(!events.contains { $0.kind == .ended })  // "r" is not ended on a guess; the loss ends it
        #expect(monitor.snapshot(at: 60).phase == .lost)
        #expect(monitor.snapshot(at: 60).current.isEmpty)
    }

    @Test func aCueCrossedWhileUnconfirmedStartsLateOrIsSkipped() {
        let cues = Self.schedule([Cue(id: "late", start: 23.5), Cue(id: "missed", start: 53.5)])
        var monitor = CueMonitor()
        // Confirmed until 20, again from 25 (a noisy passage): "late" (due 23.5) starts at 25, 1.5 s late.
        // Confirmed until 50, again from 58: "missed" (due 53.5) would be 4.5 s late: skipped.
        let observations = Playback(from: 5, to: 20, position: 5).observations()
            + Playback(from: 25, to: 50, position: 25).observations()
            + Playback(from: 58, to: 70, position: 58).observations()
        let events = Self.run(&monitor, observations, until: 70, schedules: [Self.show: cues])
        let late = events.first { $0.kind == .started && $0.cue?.id == "late" }
        #expect(abs((late?.time ?? 0) - 25) < 1e-6)
        #expect(abs((late?.lateness ?? 0) - 1.5) < 1e-6)
        #expect(Self.kinds(events, .skipped) == ["missed"])
        #expect(!Self.kinds(events, .started).contains("missed"))
    }

    @Test func aForwardSeekSkipsWhatItCrossedOwesTheLastJumpCueAndLandsInside() {
        var monitor = CueMonitor()
        let cues = Self.schedule([
            Cue(id: "j1", start: 30, restrictions: [.jump]), Cue(id: "p", start: 40), Cue(id: "j2", start: 50, restrictions: [.jump]),
            Cue(id: "q", start: 60), Cue(id: "inside", start: 75, duration: 10), Cue(id: "after", start: 90),
        ])
        let observations = Playback(from: 5, to: 20, position: 5).observations()
            + Playback(from: 21, to: 40, position: 80).observations()
        let events = Self.run(&monitor, observations, until: 40, schedules: [Self.show: cues])
        let seek = events.first { $0.kind == .seek }
        #expect(seek?.position == 80)
        #expect(abs((seek?.from ?? 0) - 21) < 0.01)
        let skipped = events.filter { $0.kind == .skipped }
        #expect(skipped.map { $0.cue!.id } == ["j1", "p", "j2", "q"])
        #expect(skipped.map(\.owed) == [false, false, true, false])
        let inside = events.first { $0.kind == .started && $0.cue?.id == "inside" }
        #expect(abs((inside?.lateness ?? 0) - 5) < 1e-6)
        #expect(Self.kinds(events, .ended) == ["inside"])
        #expect(Self.kinds(events, .started) == ["inside", "after"])
    }

    @Test func aBackwardSeekMakesLaterCuesPendingAgainExceptOnceCues() {
        var monitor = CueMonitor()
        let cues = Self.schedule([Cue(id: "once", start: 10, flags: [.once]), Cue(id: "again", start: 15)])
        let observations = Playback(from: 3, to: 20, position: 3).observations()
            + Playback(from: 21, to: 40, position: 5).observations()
        let events = Self.run(&monitor, observations, until: 40, schedules: [Self.show: cues])
        #expect(Self.kinds(events, .started) == ["once", "again", "again"])
        #expect(events.filter { $0.kind == .seek }.count == 1)
    }

    @Test func aLoneOutlierIsNotASeek() {
        var monitor = CueMonitor()
        let cues = Self.schedule([Cue(id: "a", start: 25)])
        var observations = Playback(from: 3, to: 40, position: 3).observations()
        // A repeated chorus matched elsewhere once, with middling confidence.
        observations[15].position = 200
        observations[15].confidence = 0.6
        let events = Self.run(&monitor, observations, until: 40, schedules: [Self.show: cues])
        #expect(!events.contains { $0.kind == .seek })
        let started = events.first { $0.kind == .started }
        #expect(abs((started?.time ?? 0) - 25) < 1e-6)
    }

    @Test func aSeekConfirmedByASecondObservationIsBelievedWithoutDecisiveConfidence() {
        var monitor = CueMonitor()
        let cues = Self.schedule([Cue(id: "a", start: 100)])
        let observations = Playback(from: 3, to: 20, position: 3).observations()
            + Playback(from: 21, to: 35, position: 90, confidence: 0.6).observations()
        let events = Self.run(&monitor, observations, until: 35, schedules: [Self.show: cues])
        let seek = events.first { $0.kind == .seek }
        #expect(seek?.time == 22)  // the second agreeing observation
        let started = events.first { $0.kind == .started }
        #expect(abs((started?.time ?? 0) - 31) < 1e-6)
    }

    @Test func observationsBelowTheThresholdNeverFire() {
        var monitor = CueMonitor(configuration: .init(minimumConfidence: 0.5))
        let cues = Self.schedule([Cue(id: "a", start: 10)])
        let events = Self.run(&monitor, Playback(from: 3, to: 30, position: 3, confidence: 0.4).observations(), until: 30,
                              schedules: [Self.show: cues])
        #expect(events.isEmpty)
    }

    @Test func preCuesFireWhenRecognisedFromTheBeginningAndPostCuesAtTheEnd() {
        let cues = Self.schedule([
            Cue(id: "pre", start: 0, flags: [.pre]), Cue(id: "post", start: 0, flags: [.post]), Cue(id: "mid", start: 30),
        ], duration: 60)
        var fromStart = CueMonitor()
        let events = Self.run(&fromStart, Playback(from: 4, to: 60, position: 4).observations(), until: 70,
                              schedules: [Self.show: cues])
        #expect(Self.kinds(events, .started) == ["pre", "mid", "post"])
        let post = events.first { $0.kind == .started && $0.cue?.id == "post" }
        #expect(abs((post?.time ?? 0) - 60) < 1e-6)

        var joinedLate = CueMonitor()
        let late = Self.run(&joinedLate, Playback(from: 4, to: 40, position: 20).observations(), until: 40,
                            schedules: [Self.show: cues])
        #expect(Self.kinds(late, .started) == ["mid"])  // joined at 20 s: no PRE; stopped before the end: no POST
    }

    @Test func onceCuesSurviveARestartUntilTheSessionGap() {
        let cues = Self.schedule([Cue(id: "quiz", start: 10, flags: [.once])])
        var first = CueMonitor()
        let events = Self.run(&first, Playback(from: 3, to: 15, position: 3).observations(), until: 15,
                              schedules: [Self.show: cues])
        #expect(Self.kinds(events, .started) == ["quiz"])
        #expect(first.onceRevision > 0)

        // A restarted daemon (stream time begins again) with the saved memory: not again.
        var restarted = CueMonitor(once: first.once)
        var replay = Playback(from: 3, to: 15, position: 3).observations()
        for i in replay.indices { replay[i].wallTime += 60 }
        let again = Self.run(&restarted, replay, until: 15, schedules: [Self.show: cues])
        #expect(Self.kinds(again, .started).isEmpty)
        // Identified with the cue still ahead: SKIPPED at once, saying why, so an app can tell
        // where it went (it is not `next`).
        let skipped = again.filter { $0.kind == .skipped }
        #expect(skipped.map { $0.cue?.id } == ["quiz"] && skipped.first?.reason == SkipReason.shownOnce.rawValue, "\(again)")
        #expect(skipped.first.map { $0.time == 3 } == true)
        #expect(restarted.snapshot(at: 4).next == nil)

        // A day later it is a new session.
        var tomorrow = CueMonitor(once: first.once)
        for i in replay.indices { replay[i].wallTime += 86_400 }
        #expect(Self.kinds(Self.run(&tomorrow, replay, until: 15, schedules: [Self.show: cues]), .started) == ["quiz"])
    }

    @Test func endOnNextEndsAtTheNextCueOfTheSameClass() {
        var monitor = CueMonitor()
        let cues = Self.schedule([
            Cue(id: "ch1", cueClass: "chapter", start: 5, endOnNext: true), Cue(id: "ad", cueClass: "ad", start: 8, duration: 1),
            Cue(id: "ch2", cueClass: "chapter", start: 12, endOnNext: true),
        ], duration: 20)
        let events = Self.run(&monitor, Playback(from: 3, to: 20, position: 3).observations(), until: 25,
                              schedules: [Self.show: cues])
        let sequence = events.filter { $0.kind == .started || $0.kind == .ended }.map { "\($0.kind.rawValue) \($0.cue!.id)" }
        #expect(sequence == ["started ch1", "started ad", "ended ad", "ended ch1", "started ch2", "ended ch2"])
        let ch1End = events.first { $0.kind == .ended && $0.cue?.id == "ch1" }
        #expect(abs((ch1End?.time ?? 0) - 12) < 1e-6)
    }

    @Test func aChangedScheduleKeepsWhatAlreadyHappenedByID() {
        var monitor = CueMonitor()
        let before = Self.schedule([Cue(id: "a", start: 10), Cue(id: "b", start: 30, duration: 20)])
        _ = Self.run(&monitor, Playback(from: 3, to: 35, position: 3).observations(), until: 35,
                     schedules: [Self.show: before])
        // The controller drops "b" (current), keeps "a" (fired), adds "c" behind playback and "d" ahead.
        let after = Self.schedule([Cue(id: "a", start: 10), Cue(id: "c", start: 20), Cue(id: "d", start: 40)])
        let change = monitor.scheduleChanged(after, for: Self.show, at: 35)
        #expect(change.map(\.kind) == [.ended, .schedule])
        #expect(change.first?.cue?.id == "b")
        let later = Self.run(&monitor, Playback(from: 36, to: 45, position: 36).observations(), until: 45,
                             schedules: [Self.show: after])
        #expect(Self.kinds(later, .started) == ["d"])
    }

    @Test func anotherProgrammeLosesThisOneAndSchedulesThatOne() {
        var monitor = CueMonitor()
        let a = Self.schedule([Cue(id: "a", start: 10, duration: 30)])
        let b = Self.schedule([Cue(id: "b", start: 50)])
        let observations = Playback(from: 3, to: 20, position: 3).observations()
            + Playback(programme: Self.other, from: 21, to: 40, position: 45).observations()
        let events = Self.run(&monitor, observations, until: 40, schedules: [Self.show: a, Self.other: b])
        let kinds = events.map(\.kind)
        #expect(kinds.filter { $0 == .schedule }.count == 2)
        let lostIndex = kinds.firstIndex(of: .programmeLost)
        #expect(events[lostIndex ?? 0].programme == Self.show)
        #expect(Self.kinds(events, .started) == ["a", "b"])
        #expect(monitor.snapshot(at: 40).programme == Self.other)
    }

    /// The source says its audio started over (the programme file replaced by another, or
    /// looped): nothing predicted past that moment is published; the next observation is
    /// believed at once, whatever its confidence.
    @Test func nothingIsPredictedPastARestartOfTheAudio() {
        let a = Self.schedule([Cue(id: "range", start: 10, duration: 12), Cue(id: "next", start: 23)])
        let b = Self.schedule([Cue(id: "b", start: 50)])
        var monitor = CueMonitor()
        var events = Self.run(&monitor, Playback(from: 3, to: 20, position: 3).observations(), until: 20.5,
                              schedules: [Self.show: a])
        #expect(Self.kinds(events, .started) == ["range"])
        events = monitor.audioStartedOver(at: 20.6)
        // "range" would end at 22 and "next" start at 23 on the old track: neither may fire.
        events += monitor.advance(to: 23.5)
        #expect(events.isEmpty, "\(events)")
        #expect(monitor.snapshot(at: 23.5).phase == .held)
        // Another programme, heard with middling confidence: this one is lost, that one scheduled;
        // no ENDED for a cue of the programme that is gone.
        var other = CueMonitor.Observation(programme: Self.other, position: 46, rate: 1, confidence: 0.6, time: 23.6,
                                           wallTime: 1_000_023.6)
        events = monitor.observe(other, schedule: b)
        #expect(events.map(\.kind) == [.programmeLost, .schedule, .upcoming], "\(events)")
        #expect(monitor.snapshot(at: 23.6).programme == Self.other)

        // The same programme after a restart (a file looped): a seek, believed at once.
        var looped = CueMonitor()
        _ = Self.run(&looped, Playback(from: 3, to: 20, position: 3).observations(), until: 20.5, schedules: [Self.show: a])
        _ = looped.audioStartedOver(at: 20.6)
        other = CueMonitor.Observation(programme: Self.show, position: 4.5, rate: 1, confidence: 0.6, time: 22, wallTime: 1_000_022)
        events = looped.observe(other, schedule: a)
        #expect(events.first?.kind == .seek, "\(events)")
        // From where the audio started over, not from a prediction past it.
        #expect(events.first.map { abs(($0.from ?? 0) - 20.6) < 1e-6 } == true, "\(events)")
        #expect(events.contains { $0.kind == .ended && $0.cue?.id == "range" })
        #expect(looped.snapshot(at: 22).phase == .following)
        // A restart older than the last confirmation (its news came late) changes nothing.
        #expect(looped.audioStartedOver(at: 21).isEmpty)
        #expect(looped.snapshot(at: 22.5).phase == .following)
    }

    @Test func joiningInsideACueStartsItLateAndAPassedMomentOnlyWithinTheLateLimit() {
        var monitor = CueMonitor()
        let cues = Self.schedule([Cue(id: "long", start: 10, duration: 60), Cue(id: "old", start: 20), Cue(id: "just", start: 28)])
        let events = Self.run(&monitor, Playback(from: 5, to: 10, position: 30).observations(), until: 10,
                              schedules: [Self.show: cues])
        #expect(Self.kinds(events, .started) == ["long", "just"])
        #expect(events.first { $0.cue?.id == "long" }?.lateness == 20)
        let snapshot = monitor.snapshot(at: 10)
        #expect(snapshot.current.map(\.id) == ["long"])
        #expect(snapshot.phase == .following)
    }

    @Test func theProgrammeHeardAgainAfterLossResumesWhereItIs() {
        var monitor = CueMonitor()
        let cues = Self.schedule([Cue(id: "gone", start: 30), Cue(id: "next", start: 50)])
        let observations = Playback(from: 3, to: 20, position: 3).observations()
            + Playback(from: 40, to: 60, position: 40).observations()
        let events = Self.run(&monitor, observations, until: 60, schedules: [Self.show: cues])
        #expect(events.map(\.kind).filter { $0 == .schedule }.count == 2)
        #expect(Self.kinds(events, .skipped) == ["gone"])
        #expect(Self.kinds(events, .started) == ["next"])
    }

    @Test func theTrackAveragesJitterAndMeasuresSpeed() {
        var monitor = CueMonitor()
        let cues = Self.schedule([Cue(id: "a", start: 50)])
        var observations = Playback(from: 0, to: 60, position: 0, rate: 1.04).observations()
        // ±20 ms of measurement jitter and a matcher speed off by 0.5 %.
        for i in observations.indices {
            observations[i].position += i % 2 == 0 ? 0.02 : -0.02
            observations[i].rate = 1.035
        }
        let events = Self.run(&monitor, observations, until: 60, schedules: [Self.show: cues])
        let started = events.first { $0.kind == .started }
        #expect(abs((started?.time ?? 0) - 50 / 1.04) < 0.02)
    }
}
