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

    /// A cue event of the programme playing reference `reference` of catalog "show" v3.
    private func cueEvent(_ kind: Earshot_V1_CueEvent.Kind, _ id: String, seq: UInt64, epoch: UInt64, lateness: Double = 0,
                          owed: Bool = false, reference: UInt32 = 1) -> Earshot_V1_EventEnvelope {
        var e = Earshot_V1_EventEnvelope()
        e.topic = Topics.cue
        e.seq = seq
        e.epoch = epoch
        var cue = Earshot_V1_CueEvent()
        cue.kind = kind
        cue.programme.catalog = "show"
        cue.programme.catalogVersion = 3
        cue.programme.referenceIndex = reference
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
        s.cues = [cue("a", at: 14, lasting: 3), cue("b", at: 30, lasting: 3)]
        return s
    }

    private func cue(_ id: String, at start: Double, lasting duration: Double) -> Earshot_V1_Cue {
        var c = Earshot_V1_Cue()
        c.id = id
        c.start = start
        c.duration = duration
        return c
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

    private func matchEvent(reference: UInt32, position: Double, seq: UInt64, epoch: UInt64, at ms: Int64) -> Earshot_V1_EventEnvelope {
        var e = Earshot_V1_EventEnvelope()
        e.topic = Topics.match
        e.seq = seq
        e.epoch = epoch
        var result = Earshot_V1_MatchResult()
        result.outcome = .match
        result.madeAtUnixMs = ms
        var item = snapshot(epoch: epoch, reference: reference, position: position).currentMatch
        item.predictedCurrentMatchOffset = position
        result.items = [item]
        e.match = result
        return e
    }

    @Test func aChannelChangeDrawsTheNewProgrammeWithItsOwnMarksOnly() throws {
        var follower = BoxFollower()
        follower.reset(with: snapshot(epoch: 7))
        _ = follower.apply(cueEvent(.started, "a", seq: 1, epoch: 7))
        // Matches do not decide whose marks they are: a match lost for a moment, or a client's
        // own Match of another reference, keeps them.
        var lost = Earshot_V1_EventEnvelope()
        lost.topic = Topics.match
        lost.seq = 1
        lost.epoch = 7
        lost.match.outcome = .noMatch
        _ = follower.apply(lost)
        _ = follower.apply(matchEvent(reference: 2, position: 5, seq: 2, epoch: 7, at: 1_002_000))
        _ = follower.apply(matchEvent(reference: 1, position: 23, seq: 3, epoch: 7, at: 1_003_000))
        #expect(follower.state?.cueMarks["a"]?.status == .started)
        // The channel changes: the new programme's cue events come first (its schedule, a cue
        // joined inside), then the match. The old marks go; the new one stays.
        _ = follower.apply(cueEvent(.schedule, "", seq: 2, epoch: 7, reference: 2))
        _ = follower.apply(cueEvent(.started, "b", seq: 3, epoch: 7, lateness: 1.5, owed: true, reference: 2))
        #expect(follower.apply(matchEvent(reference: 2, position: 32, seq: 4, epoch: 7, at: 1_004_000)) == .applied)
        #expect(follower.state?.cueMarks["a"] == nil)
        #expect(follower.state?.cueMarks["b"]?.status == .started)
        // A cue event of another programme with no schedule event before it clears them too.
        _ = follower.apply(cueEvent(.started, "c", seq: 4, epoch: 7, reference: 1))
        #expect(follower.state?.cueMarks.keys.sorted() == ["c"])
        let report = BoxReport(name: "b", server: "s", connection: .connected, problem: nil, view: follower.state, epoch: 7,
                               schedule: schedule(reference: 1))
        let programme = try #require(report.programme)
        #expect(programme.title == "Piece 2" && programme.referenceIndex == 2 && programme.position == 32)
        #expect(programme.positionAtMs == 1_004_000)
        #expect(programme.cues.isEmpty, "the first programme's schedule is not drawn on the second")
    }

    @Test func aSeekMovesTheCursorAndMarksTheCuesAfresh() throws {
        var follower = BoxFollower()
        follower.reset(with: snapshot(epoch: 7))
        _ = follower.apply(cueEvent(.started, "a", seq: 1, epoch: 7))
        _ = follower.apply(cueEvent(.seek, "", seq: 2, epoch: 7))
        _ = follower.apply(matchEvent(reference: 1, position: 45, seq: 1, epoch: 7, at: 1_009_000))
        let report = BoxReport(name: "b", server: "s", connection: .connected, problem: nil, view: follower.state, epoch: 7,
                               schedule: schedule())
        let programme = try #require(report.programme)
        #expect(programme.title == "Piece 1" && programme.position == 45 && programme.positionAtMs == 1_009_000)
        #expect(programme.cues.map(\.status) == ["upcoming", "upcoming"])
    }

    /// `count` cues c0, c1, … a second apart from 10 s, half a second long.
    private func denseSchedule(_ count: Int) -> Earshot_V1_CueSchedule {
        var dense = schedule()
        dense.cues = (0..<count).map { cue("c\($0)", at: 10 + Double($0), lasting: 0.5) }
        return dense
    }

    @Test func cuesCrossedInOneStepShareTheStatusOfTheLastOfThem() throws {
        var follower = BoxFollower()
        follower.reset(with: snapshot(epoch: 7))
        let dense = denseSchedule(6)
        _ = follower.apply(cueEvent(.ended, "c1", seq: 1, epoch: 7))
        // Four cues crossed together, reported as one SKIPPED of c4 standing for them.
        var crossed = cueEvent(.skipped, "c4", seq: 2, epoch: 7)
        crossed.cue.coalesced = 4
        #expect(follower.apply(crossed) == .applied)
        let report = BoxReport(name: "b", server: "s", connection: .connected, problem: nil, view: follower.state, epoch: 7, schedule: dense)
        let statuses = try #require(report.programme).cues.map(\.status)
        // c1 keeps its own ENDED; c2 and c3 are the others the event stood for; c0 and c5 were not crossed.
        #expect(statuses == ["upcoming", "ended", "skipped", "skipped", "skipped", "upcoming"])
        // Three cues started together, then the named one ended alone: the other two stay started.
        var dense2 = BoxFollower()
        dense2.reset(with: snapshot(epoch: 7))
        var started = cueEvent(.started, "c3", seq: 1, epoch: 7)
        started.cue.coalesced = 3
        _ = dense2.apply(started)
        _ = dense2.apply(cueEvent(.ended, "c3", seq: 2, epoch: 7))
        let later = BoxReport(name: "b", server: "s", connection: .connected, problem: nil, view: dense2.state, epoch: 7, schedule: dense)
        #expect(try #require(later.programme).cues.map(\.status) == ["upcoming", "started", "started", "ended", "upcoming", "upcoming"])
    }

    @Test func cuesCrossedWithAnOwedOneAreTheLastCrossedNotThoseBeforeTheOwedOne() throws {
        var follower = BoxFollower()
        follower.reset(with: snapshot(epoch: 7))
        let dense = denseSchedule(8)
        // A jump to 16.2 s crossed c2…c6, reported as one SKIPPED naming the owed c3.
        var crossed = cueEvent(.skipped, "c3", seq: 1, epoch: 7, owed: true)
        crossed.cue.coalesced = 5
        crossed.cue.position = 16.2
        _ = follower.apply(crossed)
        let report = BoxReport(name: "b", server: "s", connection: .connected, problem: nil, view: follower.state, epoch: 7, schedule: dense)
        let cues = try #require(report.programme).cues
        #expect(cues.map(\.status) == ["upcoming", "upcoming", "skipped", "skipped", "skipped", "skipped", "skipped", "upcoming"])
        #expect(cues[3].owed && !cues[2].owed)
    }

    @Test func aBoxLastHeardStaysShownStandingStillWhereItWas() throws {
        var follower = BoxFollower()
        follower.reset(with: snapshot(epoch: 7))
        let report = BoxReport(name: "b", server: "s", connection: .reconnecting, problem: "DEADLINE_EXCEEDED: no answer",
                               view: follower.state, epoch: 7, schedule: schedule(), lastHeardAtMs: 1_002_000)
        #expect(report.stale && report.lastHeardAtMs == 1_002_000)
        let programme = try #require(report.programme)
        #expect(programme.title == "Piece 1" && !programme.moving && programme.positionAtMs == 1_002_000)
        #expect(abs(programme.rate - 1.04) < 1e-12, "the measured speed is still shown")
        #expect(abs(programme.position - (20 + 2 * 1.04)) < 1e-9, "\(programme.position)")
        // A box whose clock is 5 s behind the dashboard's: its position is given on the dashboard's.
        let behind = BoxReport(name: "b", server: "s", connection: .connected, problem: nil, view: follower.state, epoch: 7,
                               schedule: nil, clockOffsetMs: 5_000)
        #expect(behind.programme?.positionAtMs == 1_005_000 && behind.programme?.position == 20)
        let followed = BoxReport(name: "b", server: "s", connection: .connected, problem: nil, view: follower.state, epoch: 7,
                                 schedule: nil)
        #expect(!followed.stale && followed.lastHeardAtMs == nil && followed.programme?.moving == true)
    }

    @Test func catalogsAreReportedByNameWithVersionStateAndProblem() throws {
        var follower = BoxFollower()
        follower.reset(with: snapshot(epoch: 7))
        var show = Earshot_V1_CatalogSummary()
        show.name = "show"
        show.version = 3
        show.state = .active
        show.referenceCount = 12
        show.totalDurationSeconds = 5400
        show.signerName = "Studio"
        var old = Earshot_V1_CatalogSummary()
        old.name = "archive"
        old.version = 1
        old.state = .failed
        old.failure = "truncated"
        old.totalDurationSeconds = .nan
        let report = BoxReport(name: "b", server: "s", connection: .connected, problem: nil, view: follower.state, epoch: 7,
                               schedule: nil, catalogs: [show, old])
        let catalogs = try #require(report.catalogs)
        #expect(catalogs.map(\.name) == ["archive", "show"])
        #expect(catalogs[1].version == 3 && catalogs[1].state == "active" && catalogs[1].hours == 1.5 && catalogs[1].signer == "Studio")
        #expect(catalogs[0].state == "failed" && catalogs[0].problem == "truncated" && catalogs[0].hours == 0)
        // A catalog/ event moves the follower's head of that topic, which tells the link to list
        // the catalogs again.
        var installed = Earshot_V1_EventEnvelope()
        installed.topic = Topics.catalog
        installed.seq = 1
        installed.epoch = 7
        installed.catalog.kind = .replaced
        #expect(follower.apply(installed) == .applied)
        #expect(follower.heads[Topics.catalog] == 1)
        // An older daemon's LOADED is today's ACTIVE.
        old.state = .loaded
        #expect(BoxReport.Catalog(old).state == "active")
    }
}
