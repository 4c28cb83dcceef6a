import EarshotClient
import EarshotSync
import EarshotTransport
import EarshotWire

/// One box followed for the dashboard: its events through an `EventSubscriber`, snapshots and
/// cue schedules through an `RpcClient`, the late-joiner rules of a ``BoxFollower``.
///
/// `start()` runs the loop in tasks until `stop()`; `report()` is safe from any thread.
public final class BoxLink: Sendable {
    /// Where a box is and how to reach it.
    public struct Target: Sendable {
        public var name: String
        public var rpc: String
        public var events: String
        public var security: ClientSecurity?
        public var timeout: Duration

        public init(name: String, rpc: String, events: String, security: ClientSecurity?, timeout: Duration = .seconds(3)) {
            self.name = name
            self.rpc = rpc
            self.events = events
            self.security = security
            self.timeout = timeout
        }
    }

    private struct Link {
        var follower = BoxFollower()
        var connection = BoxReport.Connection.connecting
        var problem: String?
        var schedule: Earshot_V1_CueSchedule?
        var client: RpcClient?
        /// A schedule request is on its way, or failed at this time (tried again after `scheduleRetry`).
        var fetchingSchedule = false
        var scheduleFailedAt: ContinuousClock.Instant?
        var subscriber: EventSubscriber?
        var events: Task<Void, Never>?
        var stopped = false
    }

    public let target: Target
    private let link = Locked(Link())
    private let ticker = Locked<Task<Void, Never>?>(nil)
    /// Called after every change the page should see.
    private let changed: @Sendable () -> Void
    /// A failed schedule request is not repeated sooner than this.
    static let scheduleRetry = Duration.seconds(5)

    public init(_ target: Target, changed: @escaping @Sendable () -> Void) {
        self.target = target
        self.changed = changed
    }

    /// Subscribes, takes the first snapshot and follows; every 250 ms it also checks whether the
    /// heartbeat is overdue (a box gone, restarted, or whose events stopped) and asks again.
    public func start() throws(TransportError) {
        try subscribe()
        let task = Task.detached { [self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(250))
                if link.withLock({ $0.follower.heartbeatOverdue() }), await resync() {
                    // The box answers but its events stopped coming: a new subscription, as a
                    // refused key or a lost connection leaves the old socket given up.
                    try? subscribe()
                }
            }
        }
        ticker.withLock { $0 = task }
    }

    public func stop() {
        ticker.withLock { $0?.cancel() }
        link.withLock { l in
            l.stopped = true
            l.events?.cancel()
            l.subscriber?.close()
            l.client?.close()
            l.client = nil
        }
    }

    /// The box as the page shows it now.
    public func report() -> BoxReport {
        link.withLock { l in
            BoxReport(name: target.name, server: target.rpc, connection: l.connection, problem: l.problem, view: l.follower.state,
                      epoch: l.follower.epoch, schedule: l.schedule)
        }
    }

    /// A new subscription (closing any earlier one), then a snapshot, then its events.
    private func subscribe() throws(TransportError) {
        let subscriber = try EventSubscriber(endpoint: target.events, topics: link.withLock { $0.follower.subscriptions },
                                             security: target.security)
        let task = Task.detached { [self] in
            await resync()
            for await event in subscriber.events {
                let outcome = link.withLock { $0.follower.apply(event) }
                if outcome == .needsSnapshot {
                    await resync()
                } else if outcome == .applied, !event.isHeartbeat {
                    afterChange()
                }
            }
        }
        let old = link.withLock { l -> (EventSubscriber?, Task<Void, Never>?) in
            guard !l.stopped else { return (subscriber, task) }
            defer { (l.subscriber, l.events) = (subscriber, task) }
            return (l.subscriber, l.events)
        }
        old.1?.cancel()
        old.0?.close()
    }

    /// Takes a snapshot; returns whether the box answered. A box that does not answer, or
    /// refuses the key, is shown so.
    @discardableResult
    private func resync() async -> Bool {
        guard let client = client() else { return false }
        do throws(RpcError) {
            let snapshot = try await client.call(Methods.Session.getSnapshot, Earshot_V1_GetSnapshotRequest())
            link.withLock {
                $0.follower.reset(with: snapshot)
                $0.connection = .connected
                $0.problem = nil
            }
            afterChange()
            return true
        } catch {
            link.withLock { l in
                if error.code == .unauthenticated {
                    l.connection = .refused
                    // A refused client stays refused: the next try takes a new one.
                    l.client?.close()
                    l.client = nil
                } else {
                    l.connection = .reconnecting
                }
                l.problem = "\(error.code): \(error.message)"
                l.follower.forget()
            }
            changed()
            return false
        }
    }

    /// Tells the page, and reads the cue schedule (off the events' way) when the programme
    /// changed.
    private func afterChange() {
        let wanted = link.withLock { l -> Earshot_V1_CueScheduleRequest? in
            guard let snapshot = l.follower.state?.session.snapshot, snapshot.hasCurrentMatch, !l.fetchingSchedule else { return nil }
            let match = snapshot.currentMatch
            if let s = l.schedule, s.programme.catalog == match.catalog, s.programme.referenceIndex == match.referenceIndex,
               s.programme.catalogVersion == match.catalogVersion { return nil }
            if let failed = l.scheduleFailedAt, ContinuousClock.now - failed < Self.scheduleRetry { return nil }
            l.fetchingSchedule = true
            var request = Earshot_V1_CueScheduleRequest()
            request.catalog = match.catalog
            request.referenceIndex = match.referenceIndex
            return request
        }
        changed()
        guard let wanted, let client = client() else {
            if wanted != nil { link.withLock { $0.fetchingSchedule = false } }
            return
        }
        Task.detached { [self] in
            let schedule = try? await client.call(Methods.Cues.getSchedule, wanted)
            link.withLock { l in
                l.fetchingSchedule = false
                if let schedule { l.schedule = schedule } else { l.scheduleFailedAt = .now }
            }
            if schedule != nil { changed() }
        }
    }

    private func client() -> RpcClient? {
        link.withLock { l in
            if let client = l.client { return client }
            guard !l.stopped else { return nil }
            var configuration = RpcClient.Configuration()
            configuration.security = target.security
            configuration.defaultTimeout = target.timeout
            l.client = try? RpcClient(endpoint: target.rpc, configuration: configuration)
            return l.client
        }
    }
}

extension Earshot_V1_EventEnvelope {
    /// A heartbeat, which changes nothing the page shows.
    var isHeartbeat: Bool {
        if case .heartbeat = body { return true }
        return false
    }
}
