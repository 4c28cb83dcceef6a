import EarshotClient
import EarshotSync
import EarshotTransport
import EarshotWire
import Foundation

/// One box followed for the dashboard: its events through an `EventSubscriber`; snapshots, cue
/// schedules and catalogs through an `RpcClient`; the late-joiner rules of a ``BoxFollower``.
/// While the box is unreachable, the last view known stays shown as such.
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
        /// A schedule request is on its way, or failed at this time (tried again after `readRetry`).
        var fetchingSchedule = false
        var scheduleFailedAt: ContinuousClock.Instant?
        /// The catalogs as last listed, and at which daemon start and head of the `catalog/` topic.
        var catalogs: [Earshot_V1_CatalogSummary]?
        var catalogsListedAt: (epoch: UInt64, head: UInt64)?
        var listingCatalogs = false
        var catalogsFailedAt: ContinuousClock.Instant?
        /// The daemon start that refused this key the list (an older daemon lists to admins only).
        var catalogsRefusedIn: UInt64?
        /// The view when the box stopped answering, and when an event last came (ms since the epoch).
        var lastKnown: BoxView?
        var lastHeardAtMs: Int64?
        /// The last (arrival here − publishing there) of the box's events and snapshots, in ms:
        /// their least is how far the box's clock is behind this one's, plus the quickest delivery.
        var clockSamples: [Int64] = []

        mutating func sampleClock(boxMs: Int64, hereMs: Int64) {
            guard boxMs > 0 else { return }
            clockSamples.append(hereMs - boxMs)
            if clockSamples.count > 32 { clockSamples.removeFirst() }
        }
        var subscriber: EventSubscriber?
        var events: Task<Void, Never>?
        var stopped = false
    }

    public let target: Target
    private let link = Locked(Link())
    private let ticker = Locked<Task<Void, Never>?>(nil)
    /// Called after every change the page should see.
    private let changed: @Sendable () -> Void
    /// A failed schedule or catalog read is not repeated sooner than this.
    static let readRetry = Duration.seconds(5)

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
                listCatalogsIfChanged()
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
            let view = l.follower.state ?? l.lastKnown
            return BoxReport(name: target.name, server: target.rpc, connection: l.connection, problem: l.problem, view: view,
                             epoch: l.follower.state == nil ? view?.session.snapshot.epoch ?? 0 : l.follower.epoch, schedule: l.schedule,
                             catalogs: l.catalogs, lastHeardAtMs: l.follower.state == nil ? l.lastHeardAtMs : nil,
                             clockOffsetMs: l.clockSamples.min() ?? 0)
        }
    }

    /// A new subscription (closing any earlier one), then a snapshot, then its events.
    private func subscribe() throws(TransportError) {
        let subscriber = try EventSubscriber(endpoint: target.events, topics: link.withLock { $0.follower.subscriptions },
                                             security: target.security)
        let task = Task.detached { [self] in
            await resync()
            for await event in subscriber.events {
                let outcome = link.withLock { l in
                    let now = Self.nowMs()
                    l.sampleClock(boxMs: event.tsUnixMs, hereMs: now)
                    // Only while followed: a box shown as last heard stays as it was then.
                    if l.follower.state != nil { l.lastHeardAtMs = now }
                    return l.follower.apply(event)
                }
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
                // Another daemon start may run on a clock set since: measured afresh.
                if $0.follower.epoch != snapshot.epoch { $0.clockSamples = [] }
                $0.follower.reset(with: snapshot)
                $0.connection = .connected
                $0.problem = nil
                $0.lastKnown = nil
                $0.lastHeardAtMs = Self.nowMs()
                $0.sampleClock(boxMs: snapshot.takenAtUnixMs, hereMs: Self.nowMs())
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
                if let state = l.follower.state { l.lastKnown = state }
                l.follower.forget()
            }
            changed()
            return false
        }
    }

    /// Tells the page, and reads (off the events' way) the cue schedule when the programme
    /// changed and the catalogs when they did.
    private func afterChange() {
        listCatalogsIfChanged()
        let wanted = link.withLock { l -> Earshot_V1_CueScheduleRequest? in
            guard let snapshot = l.follower.state?.session.snapshot, snapshot.hasCurrentMatch, !l.fetchingSchedule else { return nil }
            let match = snapshot.currentMatch
            if let s = l.schedule, s.programme.catalog == match.catalog, s.programme.referenceIndex == match.referenceIndex,
               s.programme.catalogVersion == match.catalogVersion { return nil }
            if let failed = l.scheduleFailedAt, ContinuousClock.now - failed < Self.readRetry { return nil }
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

    /// Reads `Catalogs/List` once per daemon start and again whenever the `catalog/` topic's head
    /// moved (events applied, or lost and covered by a snapshot), checked after every change and
    /// every 250 ms. A failed read is tried again after `readRetry`; a box that refuses it (an
    /// older daemon lists to admins only) is not asked again in that start.
    private func listCatalogsIfChanged() {
        let wanted = link.withLock { l -> (epoch: UInt64, head: UInt64)? in
            guard l.follower.state != nil, !l.listingCatalogs else { return nil }
            let now = (l.follower.epoch, l.follower.heads[Topics.catalog, default: 0])
            if l.catalogsRefusedIn == now.0 { return nil }
            if let listed = l.catalogsListedAt, listed.epoch == now.0, listed.head == now.1 { return nil }
            if let failed = l.catalogsFailedAt, ContinuousClock.now - failed < Self.readRetry { return nil }
            l.listingCatalogs = true
            return now
        }
        guard let wanted else { return }
        guard let client = client() else {
            link.withLock { $0.listingCatalogs = false }
            return
        }
        Task.detached { [self] in
            do throws(RpcError) {
                let listed = try await client.call(Methods.Catalogs.list, Earshot_V1_ListCatalogsRequest()).catalogs
                link.withLock { l in
                    l.listingCatalogs = false
                    l.catalogsListedAt = wanted
                    l.catalogsFailedAt = nil
                    l.catalogs = listed
                }
                changed()
            } catch {
                link.withLock { l in
                    l.listingCatalogs = false
                    if error.code == .permissionDenied { l.catalogsRefusedIn = wanted.epoch } else { l.catalogsFailedAt = .now }
                }
            }
        }
    }

    private static func nowMs() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

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
