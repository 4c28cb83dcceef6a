import EarshotSync
import EarshotTransport
import EarshotWire
import Foundation
import Synchronization

/// `earshot.v1.Health`: serving status as grpc.health.v1 ("" or a service name), and counters.
final class HealthService: Sendable {
    static let services = ["", "earshot.v1.Recognizer", "earshot.v1.Session", "earshot.v1.Catalogs", "earshot.v1.Health"]
    private let status = Locked(Earshot_V1_ServingStatus.serving)
    private let changes = Locked<[UInt64: AsyncStream<Earshot_V1_ServingStatus>.Continuation]>([:])
    private let nextID = Atomic<UInt64>(0)
    private let started = Date()
    private let stats: @Sendable () -> [String: UInt64]
    private let events: DaemonEvents

    init(events: DaemonEvents, stats: @escaping @Sendable () -> [String: UInt64]) {
        self.events = events
        self.stats = stats
    }

    func set(_ new: Earshot_V1_ServingStatus) {
        let changed = status.withLock { s -> Bool in
            defer { s = new }
            return s != new
        }
        guard changed else { return }
        events.publishHealth(new)
        let observers = changes.withLock { Array($0.values) }
        for o in observers { o.yield(new) }
    }

    private func current(for service: String) -> Earshot_V1_ServingStatus {
        Self.services.contains(service) ? status.withLock { $0 } : .serviceUnknown
    }

    func register(on server: RpcServer) {
        server.register(Methods.Health.check, role: .viewer) { [self] request, _ throws(RpcError) in
            guard Self.services.contains(request.service) else {
                throw RpcError(.notFound, "no service \"\(request.service)\"")
            }
            var reply = Earshot_V1_HealthCheckResponse()
            reply.status = current(for: request.service)
            return reply
        }
        server.register(streaming: Methods.Health.watch, role: .viewer) { [self] request, call, writer throws(RpcError) in
            let (stream, continuation) = AsyncStream.makeStream(of: Earshot_V1_ServingStatus.self)
            let id = nextID.add(1, ordering: .relaxed).newValue
            changes.withLock { $0[id] = continuation }
            defer { _ = changes.withLock { $0.removeValue(forKey: id) } }
            continuation.yield(current(for: request.service))
            // The loop ends when the transport cancels this handler's task (the call ended).
            var last: Earshot_V1_ServingStatus?
            for await s in stream where s != last {
                last = s
                var reply = Earshot_V1_HealthCheckResponse()
                reply.status = Self.services.contains(request.service) ? s : .serviceUnknown
                try writer.send(reply)
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

public enum EarshotVersion {
    public static let string = "0.3.0"
}
