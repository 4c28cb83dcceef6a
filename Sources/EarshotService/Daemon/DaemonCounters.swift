import EarshotCore
import EarshotSync

/// The daemon's own counters (matches by outcome), beside those of capture, RPC and events.
final class DaemonCounters: Sendable {
    private let values = Locked<[String: UInt64]>([:])

    func add(_ result: MatchResult) {
        let key = switch result {
        case .match: "matches"
        case .noMatch: "no_matches"
        case .error: "match_errors"
        }
        increment(key)
    }

    func increment(_ key: String, by n: UInt64 = 1) {
        values.withLock { $0[key, default: 0] += n }
    }

    var snapshot: [String: UInt64] { values.withLock { $0 } }
}
