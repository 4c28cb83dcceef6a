import EarshotWire

/// A state that events keep current: what an ``EventFollower`` holds between snapshots.
///
/// A snapshot gives the state; the follower then hands it the events of its topics, each once and
/// in order, after checking their epoch and sequence number. Events carry the full state of their
/// key, so `apply` only has to overwrite. The session dashboard's state is ``SessionView``;
/// another topic (a later `cue/` or `library/` one) gets its own conforming type.
public protocol FollowedState: Sendable {
    /// Applies one event of a followed topic. Never called for heartbeats.
    mutating func apply(_ event: Earshot_V1_EventEnvelope)
}

/// What ``EventFollower/apply(_:now:)`` did with an event.
public enum EventOutcome: Sendable, Equatable {
    /// The event was new and in order: the state (or the heartbeat bookkeeping) took it.
    case applied
    /// Nothing to do: already in the snapshot, no snapshot yet, a new snapshot is awaited, or a
    /// topic the follower does not follow.
    case dropped
    /// Events were lost or the daemon restarted: take a new snapshot and ``EventFollower/reset(to:epoch:heads:now:)``.
    case needsSnapshot
}

/// The late-joiner ("Clone") recipe of docs/PROTOCOL.md §2 as a pure, synchronous state machine:
/// no sockets, no threads, no clock of its own (every time-dependent call takes `now`).
///
/// 1. Subscribe to ``subscriptions`` first, then take a snapshot and ``reset(to:epoch:heads:now:)``
///    with it; its per-topic heads (`topic_seq`) say which events it already contains.
/// 2. Feed every event to ``apply(_:now:)``: events at or below their topic's head are dropped,
///    the next one is applied, and a gap (seq > head + 1), another epoch (the daemon restarted)
///    or a heartbeat whose heads show a followed topic moved on without us answer
///    ``EventOutcome/needsSnapshot``. From then on events are dropped until the next reset.
/// 3. Ask ``heartbeatOverdue(now:)`` periodically: after ``heartbeatTimeout`` without a heartbeat
///    it says to take a snapshot, at most once per ``resyncInterval``.
/// 4. When the snapshot call gets no answer, ``forget()`` the state: nothing is known until the
///    next snapshot.
///
/// Not thread-safe (a value type): a follower shared between tasks goes inside a `Locked`.
public struct EventFollower<State: FollowedState>: Sendable {
    /// The topics whose events update the state, in subscription order (heartbeats are implicit).
    public let topics: [String]
    /// No heartbeat for longer than this: the daemon or the connection may be gone.
    public var heartbeatTimeout: Duration
    /// ``heartbeatOverdue(now:)`` asks for a snapshot at most once per this interval.
    public var resyncInterval: Duration

    /// The state as of the last snapshot plus the events applied since; nil before the first
    /// snapshot and after ``forget()``. Still the last known state while ``needsSnapshot``.
    public private(set) var state: State?
    /// The daemon start the state belongs to (0 before the first snapshot).
    public private(set) var epoch: UInt64 = 0
    /// The last sequence number known per topic: the snapshot's `topic_seq`, then each applied event's.
    public private(set) var heads: [String: UInt64] = [:]
    /// An event or heartbeat showed the state is out of date: events are dropped until the next reset.
    public private(set) var needsSnapshot = false

    private let followed: Set<String>
    private var lastHeartbeat: ContinuousClock.Instant
    private var lastResync: ContinuousClock.Instant?

    /// A follower of `topics` with no state yet; `now` starts the heartbeat clock (a snapshot that
    /// never comes is retried once the heartbeat is overdue).
    public init(topics: [String], heartbeatTimeout: Duration = .seconds(3), resyncInterval: Duration = .seconds(1),
                now: ContinuousClock.Instant = .now) {
        self.topics = topics.filter { $0 != Topics.heartbeat }
        self.followed = Set(self.topics)
        self.heartbeatTimeout = heartbeatTimeout
        self.resyncInterval = resyncInterval
        self.lastHeartbeat = now
    }

    /// What to subscribe to: the followed topics and the heartbeat.
    public var subscriptions: [String] { topics + [Topics.heartbeat] }

    /// Whether the state is current: a snapshot was applied and no loss is pending.
    public var synced: Bool { state != nil && !needsSnapshot }

    /// Starts again from a snapshot: its state, its epoch and its per-topic heads (`topic_seq`; a
    /// topic absent from them counts as 0). Counts as a heartbeat and as a resync.
    public mutating func reset(to state: State, epoch: UInt64, heads: [String: UInt64], now: ContinuousClock.Instant = .now) {
        self.state = state
        self.epoch = epoch
        self.heads = heads
        needsSnapshot = false
        lastHeartbeat = now
        lastResync = now
    }

    /// The snapshot call got no answer: the state is unknown until the next ``reset(to:epoch:heads:now:)``.
    /// The heartbeat clock keeps running, so ``heartbeatOverdue(now:)`` asks again.
    public mutating func forget() {
        state = nil
        needsSnapshot = false
    }

    /// Takes one event: see ``EventOutcome``.
    public mutating func apply(_ event: Earshot_V1_EventEnvelope, now: ContinuousClock.Instant = .now) -> EventOutcome {
        guard state != nil, !needsSnapshot else { return .dropped }
        if event.epoch != epoch { return lost() }
        if case .heartbeat(let beat) = event.body {
            lastHeartbeat = now
            // A followed topic that moved on without us means its last events were lost.
            if beat.heads.contains(where: { followed.contains($0.key) && $0.value > heads[$0.key, default: 0] }) { return lost() }
            return .applied
        }
        guard followed.contains(event.topic) else { return .dropped }
        let known = heads[event.topic, default: 0]
        if event.seq <= known { return .dropped }
        if event.seq > known + 1 { return lost() }
        heads[event.topic] = event.seq
        state?.apply(event)
        return .applied
    }

    /// Whether to take a snapshot now because no heartbeat came for ``heartbeatTimeout``: true at
    /// most once per ``resyncInterval`` (counting resets), so a gone daemon is asked once a second.
    public mutating func heartbeatOverdue(now: ContinuousClock.Instant = .now) -> Bool {
        guard now - lastHeartbeat > heartbeatTimeout else { return false }
        if let lastResync, now - lastResync <= resyncInterval { return false }
        lastResync = now
        return true
    }

    private mutating func lost() -> EventOutcome {
        needsSnapshot = true
        return .needsSnapshot
    }
}
