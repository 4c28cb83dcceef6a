/// Who may start another call: the in-flight limits of docs/PROTOCOL.md, counted per connection,
/// per client and in all, so that no connection, key or address can take the server's capacity
/// from the others.
///
/// - A connection has at most `perConnection` calls in flight, a client at most `perClient` over
///   all its connections. A client is its key's name with CURVE, its IP address without.
/// - Every client may always have `guaranteedPerClient` calls in flight, however busy the server:
///   a well-behaved client (one call at a time) is never turned away because of the others.
/// - Calls beyond that share `total` places; viewers together get at most `total −
///   operatorReserve` of them, so that operators and admins keep room during a viewer storm.
///
/// A call counts from its arrival until its handler returns (also after a cancel), so handlers
/// that ignore cancellation cannot pile up. Worst case in flight: `total` plus the guaranteed
/// calls of the clients there are (allow-listed keys, or addresses on the LAN).
struct CallAdmission {
    struct Limits: Sendable, Equatable {
        var perConnection: Int
        var perClient: Int
        var total: Int
        var guaranteedPerClient: Int
        var operatorReserve: Int
    }

    /// One call's caller, as the counts know it.
    struct Caller: Hashable {
        let connection: PeerID
        let client: String
        let role: ClientRole
        /// How `client` is named in messages: "client \"tv-app\"" or "address 10.0.0.5".
        let clientLabel: String
    }

    let limits: Limits
    private(set) var total = 0
    private(set) var viewers = 0
    private var perConnection: [PeerID: Int] = [:]
    private var perClient: [String: Int] = [:]

    init(limits: Limits) {
        self.limits = limits
    }

    /// Why a call from `caller` may not start now; nil when it may.
    func refusal(for caller: Caller) -> String? {
        let onConnection = perConnection[caller.connection, default: 0]
        if onConnection >= limits.perConnection {
            return "\(onConnection) calls from this connection are already in flight (at most \(limits.perConnection))"
        }
        let ofClient = perClient[caller.client, default: 0]
        if ofClient >= limits.perClient {
            return "\(ofClient) calls of \(caller.clientLabel) are already in flight (at most \(limits.perClient) per client)"
        }
        if ofClient < limits.guaranteedPerClient { return nil }
        if total >= limits.total {
            return "the server is busy: \(total) calls are in flight (at most \(limits.total); beyond that only a client's first \(limits.guaranteedPerClient) are let in)"
        }
        let viewerShare = limits.total - limits.operatorReserve
        if caller.role == .viewer, viewers >= viewerShare {
            return "the server is busy: viewers have \(viewers) calls in flight (at most \(viewerShare); the rest is kept for operators and admins)"
        }
        return nil
    }

    mutating func add(_ caller: Caller) {
        total += 1
        if caller.role == .viewer { viewers += 1 }
        perConnection[caller.connection, default: 0] += 1
        perClient[caller.client, default: 0] += 1
    }

    mutating func remove(_ caller: Caller) {
        total -= 1
        if caller.role == .viewer { viewers -= 1 }
        Self.decrement(&perConnection, caller.connection)
        Self.decrement(&perClient, caller.client)
    }

    /// Calls in flight of `client` (for tests and statistics).
    func calls(ofClient client: String) -> Int { perClient[client, default: 0] }

    private static func decrement<Key: Hashable>(_ counts: inout [Key: Int], _ key: Key) {
        let left = counts[key, default: 1] - 1
        counts[key] = left > 0 ? left : nil
    }
}
