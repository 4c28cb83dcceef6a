import EarshotClient
import EarshotDashboard
import EarshotWire
import Testing

/// What the dashboard makes of a box's snapshots and events, before any page sees it.
struct BoxViewTests {
    private func snapshot(epoch: UInt64, reference: UInt32 = 1, position: Double = 20) -> Earshot_V1_SessionSnapshot {
        var s = Earshot_V1_SessionSnapshot()
        s.epoch = epoch
        s.state = .matching
        s.takenAtUnixMs = 1_000_000
        s.currentMatch.mediaItem.id = "piece\(reference)"
        s.currentMatch.mediaItem.title = "Piece \(reference)"
        s.currentMatch.catalog = "show"
        s.currentMatch.catalogVersion = 3
        s.currentMatch.referenceIndex = reference
        s.currentMatch.predictedCurrentMatchOffset = position
        s.currentMatch.timeSkew = 0.04
        s.currentMatch.confidence = 0.8
        s.cues.programme.catalog = "show"
        s.cues.programme.catalogVersion = 3
        s.cues.programme.referenceIndex = reference
        s.capture.source = "hw:CARD=USB"
        s.capture.xruns = 2
        return s
    }

    private func cueEvent(_ kind: Earshot_V1_CueEvent.Kind, _ id: String, seq: UInt64, epoch: UInt64, lateness: Double = 0,
                          owed: Bool = false) -> Earshot_V1_EventEnvelope {
        var e = Earshot_V1_EventEnvelope()
        e.topic = Topics.cue
        e.seq = seq
        e.epoch = epoch
        var cue = Earshot_V1_CueEvent()
        cue.kind = kind
        cue.cue.id = id
        cue.latenessSeconds = lateness
        cue.owed = owed
        e.cue = cue
        return e
    }

    private func schedule(reference: UInt32 = 1) -> Earshot_V1_CueSchedule {
        var s = Earshot_V1_CueSchedule()
        s.programme.catalog = "show"
        s.programme.catalogVersion = 3
        s.programme.referenceIndex = reference
        s.referenceDuration = 60
        s.cues = ["a": 14.0, "b": 30].sorted { $0.value < $1.value }.map { id, start in
            var c = Earshot_V1_Cue()
            c.id = id
            c.start = start
            c.duration = 3
            return c
        }
        return s
    }

    @Test func cueEventsMarkTheScheduleAndAReportCarriesThem() throws {
        var follower = BoxFollower()
        follower.reset(with: snapshot(epoch: 7))
        #expect(follower.apply(cueEvent(.started, "a", seq: 1, epoch: 7, lateness: 0.12, owed: true)) == .applied)
        let report = BoxReport(name: "Living room", server: "tcp://box:7400", connection: .connected, problem: nil,
                               view: follower.state, epoch: follower.epoch, schedule: schedule())
        let programme = try #require(report.programme)
        #expect(programme.title == "Piece 1" && programme.catalog == "show" && programme.catalogVersion == 3)
        #expect(programme.duration == 60 && programme.position == 20 && abs(programme.rate - 1.04) < 1e-12)
        #expect(programme.cues.map(\.id) == ["a", "b"])
        #expect(programme.cues[0].status == "started" && programme.cues[0].lateness == 0.12 && programme.cues[0].owed)
        #expect(programme.cues[0].end == 17)
        #expect(programme.cues[1].status == "upcoming" && programme.cues[1].lateness == nil)
        #expect(report.state == "matching" && report.capture?.xruns == 2 && report.capture?.source == "hw:CARD=USB")

        #expect(follower.apply(cueEvent(.ended, "a", seq: 2, epoch: 7)) == .applied)
        #expect(follower.state?.cueMarks["a"]?.status == .ended)
        #expect(follower.state?.cueMarks["a"]?.lateness == 0.12, "an ended cue keeps how late it started")
        // A seek makes every mark stale: the monitor says again what holds.
        #expect(follower.apply(cueEvent(.seek, "", seq: 3, epoch: 7)) == .applied)
        #expect(follower.state?.cueMarks.isEmpty == true)
    }

    @Test func cuesSetWhileTheBoxRunsReplaceTheScheduleAndItsMarks() throws {
        var follower = BoxFollower()
        follower.reset(with: snapshot(epoch: 7))
        _ = follower.apply(cueEvent(.started, "a", seq: 1, epoch: 7))
        var event = cueEvent(.schedule, "", seq: 2, epoch: 7)
        var newer = schedule()
        newer.cues = [newer.cues[1]]
        event.cue.schedule = newer
        #expect(follower.apply(event) == .applied)
        #expect(follower.state?.cueMarks.isEmpty == true)
        // The schedule event's cues win over the one read before.
        let report = BoxReport(name: "b", server: "s", connection: .connected, problem: nil, view: follower.state, epoch: 7,
                               schedule: schedule())
        #expect(report.programme?.cues.map(\.id) == ["b"])
    }

    @Test func numbersJSONCannotCarryBecomeZero() throws {
        var follower = BoxFollower()
        var s = snapshot(epoch: 7)
        s.currentMatch.confidence = .nan
        s.currentMatch.timeSkew = .infinity
        follower.reset(with: s)
        let report = BoxReport(name: "b", server: "s", connection: .connected, problem: nil, view: follower.state, epoch: 7, schedule: nil)
        #expect(report.programme?.confidence == 0 && report.programme?.rate == 1)
    }

    @Test func aScheduleOfAnotherProgrammeIsNotDrawnOnThisOne() throws {
        var follower = BoxFollower()
        follower.reset(with: snapshot(epoch: 7, reference: 2))
        let report = BoxReport(name: "b", server: "s", connection: .connected, problem: nil, view: follower.state,
                               epoch: 7, schedule: schedule(reference: 1))
        #expect(report.programme?.cues.isEmpty == true)
        #expect(report.programme?.duration == nil)
    }

    @Test func aNewSnapshotKeepsWhatTheSameDaemonStartSaidAndDropsAnotherStartsMarks() throws {
        var follower = BoxFollower()
        follower.reset(with: snapshot(epoch: 7))
        _ = follower.apply(cueEvent(.started, "a", seq: 1, epoch: 7))
        follower.reset(with: snapshot(epoch: 7))
        #expect(follower.state?.cueMarks["a"]?.status == .started, "a resync of the same start keeps the marks")
        follower.reset(with: snapshot(epoch: 8))
        #expect(follower.state?.cueMarks.isEmpty == true, "a restarted daemon's cues start afresh")
        // Another programme on the same start clears the marks too.
        _ = follower.apply(cueEvent(.started, "a", seq: 1, epoch: 8))
        var other = snapshot(epoch: 8, reference: 2)
        other.topicSeq[Topics.cue] = 1
        follower.reset(with: other)
        #expect(follower.state?.cueMarks.isEmpty == true)
    }

    @Test func aBoxNotYetFollowedReportsItsConnectionOnly() {
        let report = BoxReport(name: "b", server: "s", connection: .refused, problem: "UNAUTHENTICATED: refused", view: nil,
                               epoch: 0, schedule: nil)
        #expect(report.state == nil && report.programme == nil && report.capture == nil && report.matches.isEmpty)
        #expect(report.connection == .refused && report.problem == "UNAUTHENTICATED: refused")
    }
}
