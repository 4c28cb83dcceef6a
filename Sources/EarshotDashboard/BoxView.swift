import EarshotClient
import EarshotWire

/// One box as the dashboard shows it: the session (``SessionView``) kept current by its events,
/// the state of each cue of the programme from `cue/` events, and the last matches. It follows
/// `catalog/` too, so that the follower's head of that topic says when the catalogs (read from
/// `Catalogs/List`) changed.
public struct BoxView: FollowedState, Equatable {
    /// The topics that update it.
    public static let topics = SessionView.topics + [Topics.cue, Topics.catalog]
    /// Matches kept, newest last.
    public static let matchesKept = 5

    /// How a cue of the programme stands.
    public struct CueMark: Sendable, Equatable {
        public enum Status: String, Sendable {
            case upcoming, started, ended, skipped
        }
        public var status: Status
        /// Seconds after its due time the cue was fired (started events only).
        public var lateness: Double?
        /// Fired late because the programme was joined after its start.
        public var owed = false
    }

    /// One event that stood for several cues crossed in one step (`coalesced` > 1): the
    /// report gives the cues it stood for its status.
    public struct CrossedTogether: Sendable, Equatable {
        public var status: CueMark.Status
        public var count: Int
        /// The cue it names: the last crossed, or the owed one (then not necessarily the last).
        public var cue: String
        public var owed: Bool
        /// The programme's position when it happened: the last cue crossed starts at or before it.
        public var position: Double
    }

    public var session: SessionView
    /// Cue states by cue id, for the programme being followed; cleared when it changes.
    public var cueMarks: [String: CueMark] = [:]
    /// Events that stood for several cues, in the order they came; cleared with the marks.
    public var crossedTogether: [CrossedTogether] = []
    /// The last match results (outcome match), newest last.
    public var matches: [Earshot_V1_MatchedMediaItem] = []
    /// When the daemon published the last event applied (ms since the epoch), nil before one.
    public var lastEventAtMs: Int64?
    /// The programme's cue schedule as the last `cue/` schedule event gave it (cues set or
    /// cleared while the box runs); nil until one comes.
    public var schedule: Earshot_V1_CueSchedule?
    /// The programme the cue marks are of: the one the last cue event named.
    var marksFor: Programme?

    public init(snapshot: Earshot_V1_SessionSnapshot) {
        session = SessionView(snapshot: snapshot)
        marksFor = Programme(snapshot.cues.programme)
    }

    public mutating func apply(_ event: Earshot_V1_EventEnvelope) {
        let before = Programme(session.snapshot.cues.programme)
        if event.tsUnixMs > 0 { lastEventAtMs = event.tsUnixMs }
        session.apply(event)
        switch event.body {
        case .match(let result) where result.outcome == .match:
            if let top = result.items.first {
                matches.append(top)
                if matches.count > Self.matchesKept { matches.removeFirst() }
            }
        case .cue(let cue):
            // Marks are of the programme the cue monitor names: a cue event of another one (a
            // channel change) starts them afresh. Matches do not decide it, as they may come
            // after the new programme's first cue events, or be a client's own Match of another
            // reference.
            let programme = Programme(cue.kind == .state ? cue.state.programme : cue.programme)
            if programme != marksFor {
                clearMarks()
                marksFor = programme
            }
            apply(cue)
        default:
            break
        }
        if Programme(session.snapshot.cues.programme) != before { clearMarks() }
    }

    private mutating func clearMarks() {
        cueMarks = [:]
        crossedTogether = []
    }

    private mutating func apply(_ event: Earshot_V1_CueEvent) {
        switch event.kind {
        case .schedule:
            schedule = event.schedule
            clearMarks()
        case .state:
            session.snapshot.cues = event.state
        case .started:
            cueMarks[event.cue.id] = CueMark(status: .started, lateness: event.latenessSeconds, owed: event.owed)
        case .ended:
            cueMarks[event.cue.id, default: CueMark(status: .ended)].status = .ended
        case .skipped:
            cueMarks[event.cue.id] = CueMark(status: .skipped, owed: event.owed)
        case .upcoming:
            cueMarks[event.cue.id] = CueMark(status: .upcoming)
        case .seek, .programmeLost:
            clearMarks()
        default:
            break
        }
        if event.coalesced > 1, let status = cueMarks[event.cue.id]?.status {
            crossedTogether.append(CrossedTogether(status: status, count: Int(event.coalesced), cue: event.cue.id, owed: event.owed,
                                                   position: event.position))
            // Bounded whatever a programme does: the oldest say least.
            if crossedTogether.count > 64 { crossedTogether.removeFirst() }
        }
    }

    /// A programme's identity: catalog, version and reference.
    struct Programme: Equatable {
        let catalog: String, version: UInt64, reference: UInt32
        init(_ p: Earshot_V1_CueProgramme) {
            catalog = p.catalog
            version = p.catalogVersion
            reference = p.referenceIndex
        }
    }
}

/// Follows one box for the dashboard.
public typealias BoxFollower = EventFollower<BoxView>

extension EventFollower where State == BoxView {
    public init(now: ContinuousClock.Instant = .now) {
        self.init(topics: BoxView.topics, now: now)
    }

    /// Starts again from a `Session/GetSnapshot` reply, keeping the cue marks and matches of the
    /// same daemon start.
    public mutating func reset(with snapshot: Earshot_V1_SessionSnapshot, now: ContinuousClock.Instant = .now) {
        var view = BoxView(snapshot: snapshot)
        if let old = state, epoch == snapshot.epoch {
            view.session.notServing = old.session.notServing
            view.matches = old.matches
            view.schedule = old.schedule
            if BoxView.Programme(old.session.snapshot.cues.programme) == BoxView.Programme(snapshot.cues.programme) {
                view.cueMarks = old.cueMarks
                view.crossedTogether = old.crossedTogether
                view.marksFor = old.marksFor
            }
        }
        reset(to: view, epoch: snapshot.epoch, heads: snapshot.topicSeq, now: now)
    }
}
