import EarshotSync
import EarshotTransport
import Logging

/// Tells the log about the connections and calls that the limits turned away: at once for the
/// first, then at most once a minute with how many since and the last reason, so that a flood
/// of the network does not become a flood of the journal.
final class RefusalLog: Sendable {
    static let interval: Duration = .seconds(60)

    private let logger: Logger
    private let limiter: ConnectionLimiter
    private let server: RpcServer
    /// Counts already told, and when the log last spoke.
    private let told = Locked<(connections: Int, calls: Int, at: ContinuousClock.Instant?)>((0, 0, nil))

    init(logger: Logger, limiter: ConnectionLimiter, server: RpcServer) {
        self.logger = logger
        self.limiter = limiter
        self.server = server
    }

    /// Looks once a second until cancelled.
    func watch() -> Task<Void, Never> {
        Task.detached { [self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                tell(now: .now)
            }
        }
    }

    func tell(now: ContinuousClock.Instant) {
        let connections = limiter.statistics
        let calls = server.statistics
        let (toldConnections, toldCalls, at) = told.withLock { $0 }
        guard connections.refused > toldConnections || calls.rejected > toldCalls,
              at.map({ now - $0 >= Self.interval }) ?? true
        else { return }
        told.withLock { $0 = (connections.refused, calls.rejected, now) }
        let window = at == nil ? "" : " in the last minute"
        if connections.refused > toldConnections {
            logger.warning("refused \(connections.refused - toldConnections) connection(s)\(window): \(connections.lastRefusal ?? "limit reached") (last from \(connections.lastRefusedAddress ?? "?")); \(connections.open) open, at most \(limiter.limits.maximumConnections) (rpc.max_connections and the descriptor limit)")
        }
        if calls.rejected > toldCalls {
            logger.warning("refused \(calls.rejected - toldCalls) call(s) over the in-flight limits\(window) (RESOURCE_EXHAUSTED); last: \(calls.lastRejection ?? "?")")
        }
    }
}
