import EarshotClient
import EarshotSync
import EarshotTransport
import EarshotWire

/// One box followed for the dashboard: its events through an `EventSubscriber`, snapshots and
/// cue schedules through an `RpcClient`, the late-joiner rules of a ``BoxFollower``.
///
/// `start()` runs the loop in a task until `stop()`; `report()` is safe from any thread.
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
    }

    public let target: Target
    private let link = Locked(Link())
    private let tasks = Locked<[Task<Void, Never>]>([])
    /// Called after every change the page should see.
    private let changed: @Sendable () -> Void

    public init(_ target: Target, changed: @escaping @Sendable () -> Void) {
        self.target = target
        self.changed = changed
    }

    /// Subscribes, takes the first snapshot and follows; also checks every 250 ms whether the
    /// heartbeat is overdue (a box gone or restarted), and asks again.
    public func start() throws(TransportError) {
        let subscriber = try EventSubscriber(endpoint: target.events, topics: link.withLock { $0.follower.subscriptions },
                                             security: target.security)
        let events = Task.detached { [self] in
            await resync()
            for await event in subscriber.events {
                let outcome = link.withLock { $0.follower.apply(event) }
                if outcome == .needsSnapshot { await resync() } else if outcome == .applied { await afterChange() }
            }
            subscriber.close()
        }
        let ticker = Task.detached { [self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(250))
                if link.withLock({ $0.follower.heartbeatOverdue() }) { await resync() }
            }
            subscriber.close()
        }
        tasks.withLock { $0 = [events, ticker] }
    }

    public func stop() {
        for task in tasks.withLock({ $0 }) { task.cancel() }
        link.withLock { $0.client?.close() }
    }

    /// The box as the page shows it now.
    public func report() -> BoxReport {
        link.withLock { l in
            BoxReport(name: target.name, server: target.rpc, connection: l.connection, problem: l.problem, view: l.follower.state,
                      epoch: l.follower.epoch, schedule: l.schedule)
        }
    }

    /// Takes a snapshot; a box that does not answer, or refuses the key, is shown so.
    private func resync() async {
        guard let client = client() else { return }
        do throws(RpcError) {
            let snapshot = try await client.call(Methods.Session.getSnapshot, Earshot_V1_GetSnapshotRequest())
            link.withLock {
                $0.follower.reset(with: snapshot)
                $0.connection = .connected
                $0.problem = nil
            }
        } catch {
            link.withLock { l in
                if error.code == .unauthenticated {
                    l.connection = .refused
                    // A refused client stays refused: the next try takes a new one.
                    l.client?.close()
                    l.client = nil
                } else if l.connection != .connecting {
                    l.connection = .reconnecting
                }
                l.problem = "\(error.code): \(error.message)"
                l.follower.forget()
            }
        }
        await afterChange()
    }

    /// Reads the cue schedule when the programme changed, then tells the page.
    private func afterChange() async {
        let wanted = link.withLock { l -> Earshot_V1_CueScheduleRequest? in
            guard let snapshot = l.follower.state?.session.snapshot, snapshot.hasCurrentMatch else { return nil }
            let match = snapshot.currentMatch
            if let s = l.schedule, s.programme.catalog == match.catalog, s.programme.referenceIndex == match.referenceIndex,
               s.programme.catalogVersion == match.catalogVersion { return nil }
            var request = Earshot_V1_CueScheduleRequest()
            request.catalog = match.catalog
            request.referenceIndex = match.referenceIndex
            return request
        }
        if let wanted, let client = client() {
            if let schedule = try? await client.call(Methods.Cues.getSchedule, wanted) {
                link.withLock { $0.schedule = schedule }
            }
        }
        changed()
    }

    private func client() -> RpcClient? {
        link.withLock { l in
            if let client = l.client { return client }
            var configuration = RpcClient.Configuration()
            configuration.security = target.security
            configuration.defaultTimeout = target.timeout
            l.client = try? RpcClient(endpoint: target.rpc, configuration: configuration)
            return l.client
        }
    }
}
