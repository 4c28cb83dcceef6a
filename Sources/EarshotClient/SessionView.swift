import EarshotWire

/// The daemon's session as `earshot remote watch` shows it: the session snapshot kept current
/// by `session/`, `match/` and `health/` events, and the latest library notices.
public struct SessionView: FollowedState, Equatable {
    /// The topics that update it.
    public static let topics = [Topics.session, Topics.match, Topics.health, Topics.library]

    /// Library notices kept, newest last.
    public static let libraryNoticesKept = 3

    /// The last snapshot or `session` event, with the current match as the last `match` event left it.
    public var snapshot: Earshot_V1_SessionSnapshot
    /// Why the daemon does not serve (its last `health` event's message), nil while it serves.
    public var notServing: String?
    /// The last library changes announced (owner hashed, no contents), newest last. Notices
    /// are not in the snapshot: a new snapshot keeps them.
    public var libraryNotices: [Earshot_V1_LibraryNotice] = []

    public init(snapshot: Earshot_V1_SessionSnapshot, notServing: String? = nil, libraryNotices: [Earshot_V1_LibraryNotice] = []) {
        self.snapshot = snapshot
        self.notServing = notServing
        self.libraryNotices = libraryNotices
    }

    public mutating func apply(_ event: Earshot_V1_EventEnvelope) {
        switch event.body {
        case .session(let session):
            snapshot = session
        case .match(let result):
            if result.outcome == .match, let top = result.items.first {
                snapshot.currentMatch = top
                snapshot.takenAtUnixMs = result.madeAtUnixMs
            } else if result.outcome == .noMatch {
                snapshot.clearCurrentMatch()
            }
        case .health(let health):
            // A daemon that gives no message (an older one) went NOT_SERVING only to stop.
            notServing = health.status == .serving ? nil : (health.message.isEmpty ? "shutting down" : health.message)
        case .library(let notice):
            libraryNotices.append(notice)
            if libraryNotices.count > Self.libraryNoticesKept { libraryNotices.removeFirst() }
        default:
            break
        }
    }
}

/// Follows the daemon's session: snapshots from `Session/GetSnapshot`, events of ``SessionView/topics``.
public typealias SessionFollower = EventFollower<SessionView>

extension EventFollower where State == SessionView {
    /// A follower of ``SessionView/topics``.
    public init(heartbeatTimeout: Duration = .seconds(3), resyncInterval: Duration = .seconds(1), now: ContinuousClock.Instant = .now) {
        self.init(topics: SessionView.topics, heartbeatTimeout: heartbeatTimeout, resyncInterval: resyncInterval, now: now)
    }

    /// Starts again from a `Session/GetSnapshot` reply. The daemon's health is not in the snapshot:
    /// the last `health` event's verdict is kept while the daemon is the same start (epoch), and
    /// dropped for a new one.
    public mutating func reset(with snapshot: Earshot_V1_SessionSnapshot, now: ContinuousClock.Instant = .now) {
        let notServing = epoch == snapshot.epoch ? state?.notServing : nil
        reset(to: SessionView(snapshot: snapshot, notServing: notServing, libraryNotices: state?.libraryNotices ?? []),
              epoch: snapshot.epoch, heads: snapshot.topicSeq, now: now)
    }

    /// The current snapshot (nil before the first and after ``forget()``).
    public var snapshot: Earshot_V1_SessionSnapshot? { state?.snapshot }
    /// Why the daemon does not serve, nil while it serves or nothing is known.
    public var notServing: String? { state?.notServing }
    /// The last library notices, newest last.
    public var libraryNotices: [Earshot_V1_LibraryNotice] { state?.libraryNotices ?? [] }
}
