import EarshotCore
import EarshotSync
import EarshotTransport
import EarshotWire
import FoundationEssentials
import Synchronization

/// `earshot.v1.Health`: serving status as grpc.health.v1 ("" or a service name), what is wrong
/// while a service is not serving, and counters.
///
/// Two things stop services: the daemon stopping (every service, "stopping"), and a capture
/// problem, which stops what needs audio: the daemon as a whole ("") and the Recognizer, whose
/// answers would otherwise come from audio it no longer hears ("audio capture: <problem>").
/// Session, Catalogs, Cues, Library and Health go on serving through a capture problem, so that clients can
/// still read the session's state and manage catalogs.
final class HealthService: Sendable {
    static let services = ["", "earshot.v1.Recognizer", "earshot.v1.Session", "earshot.v1.Catalogs", "earshot.v1.Cues",
                            "earshot.v1.Library", "earshot.v1.Health"]
    /// The services a capture problem stops.
    static let servicesNeedingAudio: Set<String> = ["", "earshot.v1.Recognizer"]

    /// What the daemon's health depends on.
    struct Condition: Equatable, Sendable {
        var stopping = false
        var captureProblem: String?
        /// Why the library cannot serve (a damaged or unreadable database): only the Library
        /// service stops; recognition goes on.
        var libraryProblem: String?
    }

    /// One service's health, as Check and Watch answer it.
    struct ServiceHealth: Equatable, Sendable {
        var status: Earshot_V1_ServingStatus
        var message = ""
    }

    private let condition = Locked(Condition())
    private let changes = Locked<[UInt64: AsyncStream<Condition>.Continuation]>([:])
    private let nextID = Atomic<UInt64>(0)
    private let started = Date()
    private let stats: @Sendable () -> [String: UInt64]
    private let events: DaemonEvents

    init(events: DaemonEvents, stats: @escaping @Sendable () -> [String: UInt64]) {
        self.events = events
        self.stats = stats
    }

    /// The daemon's own status: `.notServing` from the moment it starts stopping.
    func set(_ new: Earshot_V1_ServingStatus) {
        update { $0.stopping = new != .serving }
    }

    /// Why capture delivers no audio, or nil once it does again.
    func setCaptureProblem(_ problem: String?) {
        update { $0.captureProblem = problem }
    }

    /// The library cannot serve (set once at start; fixed by a restart).
    func setLibraryProblem(_ problem: String?) {
        update { $0.libraryProblem = problem }
    }

    /// `service`'s health under `condition`.
    static func health(of service: String, in condition: Condition) -> ServiceHealth {
        guard services.contains(service) else { return ServiceHealth(status: .serviceUnknown) }
        if condition.stopping { return ServiceHealth(status: .notServing, message: "stopping") }
        if let problem = condition.captureProblem, servicesNeedingAudio.contains(service) {
            return ServiceHealth(status: .notServing, message: "audio capture: \(problem)")
        }
        if let problem = condition.libraryProblem, service == "earshot.v1.Library" {
            return ServiceHealth(status: .notServing, message: problem)
        }
        return ServiceHealth(status: .serving)
    }

    /// Changes the condition and tells everyone watching, under the lock: two changes close
    /// together reach every watcher and the event topic in the order they were made.
    private func update(_ change: (inout Condition) -> Void) {
        condition.withLock { c in
            let old = c
            change(&c)
            guard c != old else { return }
            let daemon = Self.health(of: "", in: c)
            if daemon != Self.health(of: "", in: old) { events.publishHealth(daemon.status, message: daemon.message) }
            for o in changes.withLock({ Array($0.values) }) { o.yield(c) }
        }
    }

    private func reply(_ health: ServiceHealth) -> Earshot_V1_HealthCheckResponse {
        var reply = Earshot_V1_HealthCheckResponse()
        reply.status = health.status
        reply.message = health.message
        return reply
    }

    func register(on server: RpcServer) {
        server.register(Methods.Health.check, role: .viewer) { [self] request, _ throws(RpcError) in
            guard Self.services.contains(request.service) else {
                throw RpcError(.notFound, "no service \"\(request.service)\"")
            }
            return reply(Self.health(of: request.service, in: condition.withLock { $0 }))
        }
        server.register(streaming: Methods.Health.watch, role: .viewer) { [self] request, call, writer throws(RpcError) in
            let (stream, continuation) = AsyncStream.makeStream(of: Condition.self)
            let id = nextID.add(1, ordering: .relaxed).newValue
            // The current condition first, then every change after it (`update` holds the same lock).
            condition.withLock { c in
                changes.withLock { $0[id] = continuation }
                continuation.yield(c)
            }
            defer { _ = changes.withLock { $0.removeValue(forKey: id) } }
            // The loop ends when the transport cancels this handler's task (the call ended).
            var last: ServiceHealth?
            for await c in stream {
                let health = Self.health(of: request.service, in: c)
                guard health != last else { continue }
                last = health
                try writer.send(reply(health))
            }
            if let reason = call.cancellationReason() { throw reason }
        }
        server.register(Methods.Health.getStats, role: .viewer) { [self] _, _ throws(RpcError) in
            var reply = Earshot_V1_Stats()
            reply.counters = stats()
            reply.uptimeMs = Int64(Date().timeIntervalSince(started) * 1000)
            reply.version = EarshotVersion.string
            return reply
        }
    }
}
