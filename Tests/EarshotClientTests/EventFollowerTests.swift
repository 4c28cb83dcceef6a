import EarshotClient
import EarshotWire
import Testing

/// `follower.apply(event, now: t0 + seconds)` (a function, so that `#expect` can take it whole).
func feed<State>(_ follower: inout EventFollower<State>, _ event: Earshot_V1_EventEnvelope, at seconds: Double) -> EventOutcome {
    follower.apply(event, now: EventFollowerTests.at(seconds))
}

/// `follower.heartbeatOverdue(now: t0 + seconds)`.
func overdue<State>(_ follower: inout EventFollower<State>, at seconds: Double) -> Bool {
    follower.heartbeatOverdue(now: EventFollowerTests.at(seconds))
}

/// The late-joiner rules of docs/PROTOCOL.md §2 ("Joining late"), without a daemon: snapshots and
/// events are made by hand and time is given, never slept.
struct EventFollowerTests {
    static let epoch: UInt64 = 0xE5
    static let t0 = ContinuousClock.now

    /// `seconds` after t0.
    static func at(_ seconds: Double) -> ContinuousClock.Instant { t0 + .milliseconds(Int64(seconds * 1000)) }

    static func snapshot(epoch: UInt64 = epoch, heads: [String: UInt64] = [Topics.session: 5, Topics.match: 7, Topics.health: 2],
                         state: Earshot_V1_SessionState = .matching) -> Earshot_V1_SessionSnapshot {
        var s = Earshot_V1_SessionSnapshot()
        s.epoch = epoch
        s.topicSeq = heads
        s.state = state
        return s
    }

    static func item(_ title: String) -> Earshot_V1_MatchedMediaItem {
        var item = Earshot_V1_MatchedMediaItem()
        item.mediaItem.title = title
        return item
    }

    static func event(_ topic: String, seq: UInt64, epoch: UInt64 = epoch,
                      _ body: Earshot_V1_EventEnvelope.OneOf_Body? = nil) -> Earshot_V1_EventEnvelope {
        var e = Earshot_V1_EventEnvelope()
        e.topic = topic
        e.seq = seq
        e.epoch = epoch
        e.body = body
        return e
    }

    static func session(seq: UInt64, state: Earshot_V1_SessionState, epoch: UInt64 = epoch) -> Earshot_V1_EventEnvelope {
        var s = Earshot_V1_SessionSnapshot()
        s.state = state
        return event(Topics.session, seq: seq, epoch: epoch, .session(s))
    }

    static func match(seq: UInt64, _ outcome: Earshot_V1_MatchOutcome, item title: String? = nil, at ms: Int64 = 0) -> Earshot_V1_EventEnvelope {
        var m = Earshot_V1_MatchResult()
        m.outcome = outcome
        if let title { m.items = [item(title)] }
        m.madeAtUnixMs = ms
        return event(Topics.match, seq: seq, .match(m))
    }

    static func health(seq: UInt64, _ status: Earshot_V1_ServingStatus, _ message: String = "") -> Earshot_V1_EventEnvelope {
        var h = Earshot_V1_HealthEvent()
        h.status = status
        h.message = message
        return event(Topics.health, seq: seq, .health(h))
    }

    static func heartbeat(seq: UInt64, heads: [String: UInt64], epoch: UInt64 = epoch) -> Earshot_V1_EventEnvelope {
        var hb = Earshot_V1_Heartbeat()
        hb.heads = heads
        return event(Topics.heartbeat, seq: seq, epoch: epoch, .heartbeat(hb))
    }

    /// A follower that took `snapshot()` at t0.
    static func joined(_ snapshot: Earshot_V1_SessionSnapshot = snapshot()) -> SessionFollower {
        var follower = SessionFollower(now: t0)
        follower.reset(with: snapshot, now: t0)
        return follower
    }

    // MARK: Joining late

    @Test func subscribesToItsTopicsAndTheHeartbeat() {
        let follower = SessionFollower(now: Self.t0)
        #expect(follower.topics == [Topics.session, Topics.match, Topics.health, Topics.library])
        #expect(follower.subscriptions == [Topics.session, Topics.match, Topics.health, Topics.library, Topics.heartbeat])
        let catalogs = EventFollower<SessionView>(topics: [Topics.catalog, Topics.heartbeat], now: Self.t0)
        #expect(catalogs.topics == [Topics.catalog], "the heartbeat is implicit, never a followed topic")
    }

    @Test func eventsBeforeAnySnapshotAreDropped() {
        var follower = SessionFollower(now: Self.t0)
        #expect(!follower.synced)
        #expect(feed(&follower, Self.session(seq: 1, state: .idle), at: 0.1) == .dropped)
        #expect(feed(&follower, Self.heartbeat(seq: 1, heads: [Topics.session: 9]), at: 0.2) == .dropped)
        #expect(follower.snapshot == nil)
        #expect(follower.heads.isEmpty)
    }

    @Test func snapshotGivesStateEpochAndHeads() {
        let follower = Self.joined()
        #expect(follower.synced)
        #expect(follower.epoch == Self.epoch)
        #expect(follower.heads == [Topics.session: 5, Topics.match: 7, Topics.health: 2])
        #expect(follower.snapshot?.state == .matching)
        #expect(follower.notServing == nil)
    }

    @Test func eventsAtOrBelowTheSnapshotHeadAreDropped() {
        var follower = Self.joined()
        for seq: UInt64 in [1, 4, 5] {
            #expect(feed(&follower, Self.session(seq: seq, state: .idle), at: 0.1) == .dropped, "seq \(seq)")
        }
        #expect(feed(&follower, Self.match(seq: 7, .noMatch), at: 0.1) == .dropped)
        #expect(follower.snapshot?.state == .matching, "a dropped event changed the state")
        #expect(follower.heads[Topics.session] == 5)
        #expect(follower.synced)
    }

    @Test func theEventAfterTheHeadIsAppliedAndMovesIt() {
        var follower = Self.joined()
        #expect(feed(&follower, Self.session(seq: 6, state: .idle), at: 0.1) == .applied)
        #expect(follower.snapshot?.state == .idle)
        #expect(follower.heads[Topics.session] == 6)
        #expect(feed(&follower, Self.session(seq: 6, state: .matching), at: 0.2) == .dropped, "the same event twice")
        #expect(feed(&follower, Self.session(seq: 7, state: .prerecording), at: 0.3) == .applied)
        #expect(follower.snapshot?.state == .prerecording)
        #expect(follower.heads[Topics.session] == 7)
        #expect(follower.heads[Topics.match] == 7, "another topic's head moved")
    }

    @Test func aTopicAbsentFromTheSnapshotStartsAtZero() {
        var follower = Self.joined(Self.snapshot(heads: [:]))
        #expect(feed(&follower, Self.health(seq: 2, .notServing, "no audio"), at: 0.1) == .needsSnapshot)
        follower = Self.joined(Self.snapshot(heads: [:]))
        #expect(feed(&follower, Self.health(seq: 1, .notServing, "no audio"), at: 0.1) == .applied)
        #expect(follower.notServing == "no audio")
    }

    // MARK: Losses

    @Test func aGapAsksForASnapshotAndDropsEventsUntilIt() {
        var follower = Self.joined()
        #expect(feed(&follower, Self.session(seq: 7, state: .idle), at: 0.1) == .needsSnapshot)
        #expect(follower.needsSnapshot)
        #expect(!follower.synced)
        #expect(follower.snapshot?.state == .matching, "the gap's event was applied")
        #expect(follower.snapshot != nil, "the last known state stays until the new snapshot")
        #expect(feed(&follower, Self.session(seq: 8, state: .idle), at: 0.2) == .dropped)
        #expect(feed(&follower, Self.match(seq: 8, .match, item: "Piece 1"), at: 0.2) == .dropped)
        #expect(!follower.snapshot!.hasCurrentMatch)

        follower.reset(with: Self.snapshot(heads: [Topics.session: 8, Topics.match: 8]), now: Self.at(0.5))
        #expect(follower.synced)
        #expect(feed(&follower, Self.session(seq: 9, state: .idle), at: 0.6) == .applied)
        #expect(follower.snapshot?.state == .idle)
    }

    @Test func anotherEpochAsksForASnapshot() {
        var follower = Self.joined()
        // The next seq of a topic, but from another daemon start: seqs restarted, nothing is comparable.
        #expect(feed(&follower, Self.session(seq: 6, state: .idle, epoch: Self.epoch + 1), at: 0.1) == .needsSnapshot)
        #expect(follower.snapshot?.state == .matching)
        #expect(follower.needsSnapshot)

        follower.reset(with: Self.snapshot(epoch: Self.epoch + 1, heads: [Topics.session: 1]), now: Self.at(0.3))
        #expect(follower.epoch == Self.epoch + 1)
        #expect(follower.heads == [Topics.session: 1])
        #expect(feed(&follower, Self.session(seq: 2, state: .idle, epoch: Self.epoch + 1), at: 0.4) == .applied)
        // A late event of the old start still asks for a snapshot: old and new seqs cannot be compared.
        #expect(feed(&follower, Self.session(seq: 6, state: .idle), at: 0.5) == .needsSnapshot)
    }

    @Test func aHeartbeatOfAnotherEpochAsksForASnapshot() {
        var follower = Self.joined()
        #expect(feed(&follower, Self.heartbeat(seq: 1, heads: [:], epoch: 1), at: 0.1) == .needsSnapshot)
    }

    @Test func aHeartbeatShowingAFollowedTopicAheadAsksForASnapshot() {
        var follower = Self.joined()
        // All heads at or below ours (the heartbeat's own topic and unknown ones are not compared).
        #expect(feed(&follower, Self.heartbeat(seq: 40, heads: [Topics.session: 5, Topics.match: 6, Topics.heartbeat: 40]), at: 1) == .applied)
        #expect(follower.synced)
        // match/ is at 8 at the daemon, we have 7: its last event was lost (a lost tail, no gap to see).
        #expect(feed(&follower, Self.heartbeat(seq: 41, heads: [Topics.session: 5, Topics.match: 8, Topics.heartbeat: 41]), at: 2) == .needsSnapshot)
        #expect(follower.needsSnapshot)
    }

    @Test func aHeartbeatAfterAppliedEventsIsInStep() {
        var follower = Self.joined()
        #expect(feed(&follower, Self.match(seq: 8, .noMatch), at: 0.5) == .applied)
        #expect(feed(&follower, Self.heartbeat(seq: 3, heads: [Topics.match: 8, Topics.session: 5, Topics.health: 2]), at: 1) == .applied)
        #expect(follower.synced)
    }

    @Test func aHeartbeatIgnoresTopicsNotFollowed() {
        var follower = Self.joined(Self.snapshot(heads: [Topics.session: 5, Topics.catalog: 1]))
        // catalog/ moved on, but this follower does not receive it: nothing was lost to it.
        #expect(feed(&follower, Self.heartbeat(seq: 2, heads: [Topics.session: 5, Topics.catalog: 3, Topics.loadTest: 900]), at: 1) == .applied)
        #expect(follower.synced)
    }

    @Test func eventsOfTopicsNotFollowedAreDropped() {
        var follower = EventFollower<SessionView>(topics: [Topics.session], now: Self.t0)
        follower.reset(to: SessionView(snapshot: Self.snapshot()), epoch: Self.epoch, heads: [Topics.session: 5], now: Self.t0)
        #expect(feed(&follower, Self.match(seq: 1, .match, item: "Piece 1"), at: 0.1) == .dropped)
        #expect(follower.snapshot?.hasCurrentMatch == false)
        #expect(follower.heads[Topics.match] == nil)
        // And a heartbeat's match/ head does not concern it.
        #expect(feed(&follower, Self.heartbeat(seq: 1, heads: [Topics.match: 1, Topics.session: 5]), at: 1) == .applied)
    }

    @Test func libraryNoticesAreKeptNewestLastAndSurviveANewSnapshot() {
        var follower = Self.joined()
        for version in UInt64(1)...5 {
            var notice = Earshot_V1_LibraryNotice()
            notice.ownerHash = "abc"
            notice.version = version
            notice.kind = .added
            #expect(feed(&follower, Self.event(Topics.library, seq: version, .library(notice)), at: Double(version) / 10) == .applied)
        }
        #expect(follower.libraryNotices.map(\.version) == [3, 4, 5])
        // A new snapshot of the same daemon keeps them (they are not in the snapshot).
        follower.reset(with: Self.snapshot(heads: [Topics.session: 5, Topics.library: 5]), now: Self.at(1))
        #expect(follower.libraryNotices.map(\.version) == [3, 4, 5])
    }

    @Test func forgettingDropsTheStateUntilTheNextSnapshot() {
        var follower = Self.joined()
        follower.forget()
        #expect(follower.snapshot == nil)
        #expect(!follower.synced)
        #expect(feed(&follower, Self.session(seq: 6, state: .idle), at: 0.1) == .dropped)
        follower.reset(with: Self.snapshot(state: .prerecording), now: Self.at(1))
        #expect(follower.snapshot?.state == .prerecording)
    }

    // MARK: Applying session, match and health events

    @Test func aSessionEventReplacesTheSnapshot() {
        var follower = Self.joined()
        var session = Earshot_V1_SessionSnapshot()
        session.state = .prerecording
        session.captureProblem = "device unplugged"
        session.currentMatch = Self.item("Piece 2")
        #expect(feed(&follower, Self.event(Topics.session, seq: 6, .session(session)), at: 0.1) == .applied)
        #expect(follower.snapshot?.captureProblem == "device unplugged")
        #expect(follower.snapshot?.currentMatch.mediaItem.title == "Piece 2")
        #expect(follower.snapshot?.state == .prerecording)
    }

    @Test func aMatchEventSetsAndClearsTheCurrentMatch() {
        var follower = Self.joined()
        #expect(follower.snapshot?.hasCurrentMatch == false)
        #expect(feed(&follower, Self.match(seq: 8, .match, item: "Piece 1", at: 1_700_000_000_123), at: 0.1) == .applied)
        #expect(follower.snapshot?.currentMatch.mediaItem.title == "Piece 1")
        #expect(follower.snapshot?.takenAtUnixMs == 1_700_000_000_123, "the offset is valid at the match's time")

        // An outcome that says nothing about the programme (an error) keeps it.
        #expect(feed(&follower, Self.match(seq: 9, .error), at: 0.2) == .applied)
        #expect(follower.snapshot?.currentMatch.mediaItem.title == "Piece 1")

        #expect(feed(&follower, Self.match(seq: 10, .match, item: "Piece 2", at: 1_700_000_001_000), at: 0.3) == .applied)
        #expect(follower.snapshot?.currentMatch.mediaItem.title == "Piece 2")

        #expect(feed(&follower, Self.match(seq: 11, .noMatch), at: 0.4) == .applied)
        #expect(follower.snapshot?.hasCurrentMatch == false)
        #expect(follower.snapshot?.state == .matching, "a match event changed the session state")
    }

    @Test func aHealthEventSetsAndClearsNotServing() {
        var follower = Self.joined()
        #expect(feed(&follower, Self.health(seq: 3, .notServing, "capture: device unplugged"), at: 0.1) == .applied)
        #expect(follower.notServing == "capture: device unplugged")
        #expect(feed(&follower, Self.health(seq: 4, .serving), at: 0.2) == .applied)
        #expect(follower.notServing == nil)
        // An older daemon gives no message: it goes NOT_SERVING only to stop.
        #expect(feed(&follower, Self.health(seq: 5, .notServing), at: 0.3) == .applied)
        #expect(follower.notServing == "shutting down")
    }

    @Test func notServingSurvivesASnapshotOfTheSameStartOnly() {
        var follower = Self.joined()
        #expect(feed(&follower, Self.health(seq: 3, .notServing, "capture: no audio"), at: 0.1) == .applied)
        follower.reset(with: Self.snapshot(heads: [Topics.health: 3]), now: Self.at(1))
        #expect(follower.notServing == "capture: no audio", "the snapshot does not carry health: keep the last verdict")
        follower.reset(with: Self.snapshot(epoch: Self.epoch + 1, heads: [:]), now: Self.at(2))
        #expect(follower.notServing == nil, "a new daemon start: the old verdict is over")
    }

    // MARK: Heartbeat overdue

    @Test func heartbeatOverdueAfterThreeSeconds() {
        var follower = Self.joined()
        #expect(!overdue(&follower, at: 1))
        #expect(!overdue(&follower, at: 3), "exactly 3 s is not yet overdue")
        #expect(overdue(&follower, at: 3.1))
    }

    @Test func heartbeatsKeepItFromBeingOverdue() {
        var follower = Self.joined()
        for second in 1...10 {
            #expect(feed(&follower, Self.heartbeat(seq: UInt64(second), heads: [:]), at: Double(second)) == .applied)
            #expect(!overdue(&follower, at: Double(second) + 0.9), "at \(second).9 s")
        }
        #expect(overdue(&follower, at: 13.5))
    }

    @Test func heartbeatOverdueIsRateLimitedToOnceASecond() {
        var follower = Self.joined()
        #expect(overdue(&follower, at: 4))
        #expect(!overdue(&follower, at: 4.25))
        #expect(!overdue(&follower, at: 4.75))
        #expect(!overdue(&follower, at: 5), "exactly 1 s after the last try")
        #expect(overdue(&follower, at: 5.1))
        #expect(!overdue(&follower, at: 5.5))
        #expect(overdue(&follower, at: 6.2))
    }

    @Test func aSnapshotRestartsTheHeartbeatClock() {
        var follower = Self.joined()
        #expect(overdue(&follower, at: 4))
        follower.reset(with: Self.snapshot(), now: Self.at(4.5))
        #expect(!overdue(&follower, at: 7))
        #expect(overdue(&follower, at: 7.6))
    }

    @Test func aSnapshotThatNeverComesIsRetriedWhenTheHeartbeatIsOverdue() {
        // Started at t0, the first snapshot got no answer (or never returned): no heartbeat counts
        // without a snapshot, so the clock runs from the start.
        var follower = SessionFollower(now: Self.t0)
        #expect(feed(&follower, Self.heartbeat(seq: 1, heads: [:]), at: 2) == .dropped)
        #expect(!overdue(&follower, at: 2.5))
        #expect(overdue(&follower, at: 3.5))

        // Likewise after forget(): the daemon stopped answering.
        var gone = Self.joined()
        gone.forget()
        #expect(feed(&gone, Self.heartbeat(seq: 1, heads: [:]), at: 1) == .dropped)
        #expect(overdue(&gone, at: 3.2))
        #expect(!overdue(&gone, at: 3.7))
        #expect(overdue(&gone, at: 4.3))
    }

    @Test func timingsCanBeChosen() {
        var follower = EventFollower<SessionView>(topics: SessionView.topics, heartbeatTimeout: .seconds(10),
                                                  resyncInterval: .seconds(5), now: Self.t0)
        follower.reset(with: Self.snapshot(), now: Self.t0)
        #expect(!overdue(&follower, at: 9))
        #expect(overdue(&follower, at: 10.5))
        #expect(!overdue(&follower, at: 15))
        #expect(overdue(&follower, at: 15.6))
    }
}

/// The mechanism is not tied to the session: any state that takes events can be followed.
struct CustomFollowedStateTests {
    /// The loaded catalogs' names, as a later `library/` or `cue/` state would keep its own.
    struct CatalogNames: FollowedState {
        var names: Set<String> = []
        mutating func apply(_ event: Earshot_V1_EventEnvelope) {
            guard case .catalog(let change) = event.body else { return }
            switch change.kind {
            case .loaded: names.insert(change.catalog.name)
            case .removed: names.remove(change.catalog.name)
            default: break
            }
        }
    }

    static func catalog(seq: UInt64, _ kind: Earshot_V1_CatalogEvent.Kind, _ name: String) -> Earshot_V1_EventEnvelope {
        var change = Earshot_V1_CatalogEvent()
        change.kind = kind
        change.catalog.name = name
        return EventFollowerTests.event(Topics.catalog, seq: seq, .catalog(change))
    }

    @Test func followsAnotherTopicWithItsOwnState() {
        let t0 = EventFollowerTests.t0
        var follower = EventFollower<CatalogNames>(topics: [Topics.catalog], now: t0)
        #expect(follower.subscriptions == [Topics.catalog, Topics.heartbeat])
        follower.reset(to: CatalogNames(names: ["show"]), epoch: EventFollowerTests.epoch, heads: [Topics.catalog: 1], now: t0)
        #expect(feed(&follower, Self.catalog(seq: 1, .loaded, "show"), at: 0) == .dropped)
        #expect(feed(&follower, Self.catalog(seq: 2, .loaded, "film"), at: 0) == .applied)
        #expect(feed(&follower, Self.catalog(seq: 3, .removed, "show"), at: 0) == .applied)
        #expect(follower.state?.names == ["film"])
        #expect(feed(&follower, Self.catalog(seq: 5, .loaded, "news"), at: 0) == .needsSnapshot)
        #expect(follower.state?.names == ["film"])
        // Session events are not its business, nor is the session head in a heartbeat.
        #expect(feed(&follower, EventFollowerTests.session(seq: 1, state: .idle), at: 0) == .dropped)
    }
}
