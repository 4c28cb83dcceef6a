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
    /// Counts already told (door closings, connections shut after accept, calls), and when the
    /// log last spoke.
    private let told = Locked<(closings: Int, connections: Int, calls: Int, at: ContinuousClock.Instant?)>((0, 0, 0, nil))

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
        let (toldClosings, toldConnections, toldCalls, at) = told.withLock { $0 }
        let connectionNews = connections.closings > toldClosings || connections.refused > toldConnections
            || (connections.blockedAddresses > 0 && at == nil)
        guard connectionNews || calls.rejected > toldCalls, at.map({ now - $0 >= Self.interval }) ?? true else { return }
        told.withLock { $0 = (connections.closings, connections.refused, calls.rejected, now) }
        let window = at == nil ? "" : " in the last minute"
        if connectionNews {
            let limits = limiter.limits
            var what: [String] = []
            if connections.closings > toldClosings {
                what.append("closed to new connections \(connections.closings - toldClosings) time(s)\(window) at \(limits.maximumConnections) open")
            }
            if connections.blockedAddresses > 0 {
                what.append("\(connections.blockedAddresses) address(es) at their limit of \(limits.maximumPerAddress) turned away")
            }
            if connections.refused > toldConnections {
                what.append("\(connections.refused - toldConnections) connection(s) shut just after accept (last: \(connections.lastRefusal ?? "?"), from \(connections.lastRefusedAddress ?? "?"))")
            }
            logger.warning("connection limit reached: \(what.joined(separator: "; ")); \(connections.open) open now (rpc.max_connections, rpc.max_connections_per_address and the descriptor limit set these)")
        }
        if calls.rejected > toldCalls {
            logger.warning("refused \(calls.rejected - toldCalls) call(s) over the in-flight limits\(window) (RESOURCE_EXHAUSTED); last: \(calls.lastRejection ?? "?")")
        }
    }
}
