import EarshotCore
import EarshotWire
import FoundationEssentials
import Logging

/// Where every result the daemon makes goes: the one producer of the match/ topic, the match
/// counters and the match log lines. A Match call, a StreamMatches stream, MatchSignature and
/// the follow-mode session stream all hand their results here, and the rules of what is
/// published, counted and logged live in this one place.
final class MatchFeed: Sendable {
    /// Who made a result.
    enum Origin {
        /// A Match call: published, so dashboards see what a client asked for.
        case request
        /// The daemon's own continuous recognition (`session.follow`): published and logged.
        case follow
        /// A StreamMatches stream (the caller has it) or a MatchSignature call (not audio of
        /// the room): counted only.
        case stream, signature
    }

    private let events: DaemonEvents
    private let counters: DaemonCounters
    private let logger: Logger

    init(events: DaemonEvents, counters: DaemonCounters, logger: Logger) {
        self.events = events
        self.counters = counters
        self.logger = logger
    }

    /// Counts `result`, publishes and logs it as its origin requires, and returns it as sent.
    /// Repeats of the item being followed are counted but never published.
    @discardableResult
    func record(_ result: MatchResult, from origin: Origin, streamTime: Double, isRepeat: Bool = false) -> Earshot_V1_MatchResult {
        counters.add(result)
        let message = Earshot_V1_MatchResult(result, repeat: isRepeat, streamTime: streamTime)
        guard !isRepeat else { return message }
        switch origin {
        case .request:
            events.publishMatch(message)
        case .follow:
            events.publishMatch(message)
            if let item = result.mediaItems.first {
                logger.info("match: \(item.mediaItem.title ?? item.mediaItem.id) (\(item.catalogName) v\(item.catalogVersion)) at \(item.predictedCurrentMatchOffset.decimalText(places: 2)) s, skew \((item.frequencySkew * 100).decimalText(places: 2, signed: true)) %, confidence \(item.confidence.decimalText(places: 2))")
            }
        case .stream, .signature:
            break
        }
        return message
    }
}
