/// Which subscriptions an event socket applies.
///
/// libzmq keeps every distinct prefix each subscriber asks for, in memory that is not given back
/// to the system; ten connections subscribing to 20 000 made-up 200-byte prefixes each took
/// 140 MB. A prefix that is not the start of a topic the socket publishes can never match an
/// event, so it is not applied at all (and counted). What a connection can hold is then bounded
/// by the prefixes of the topic names — `maximumPerConnection`, a few hundred bytes each.
struct SubscriptionFilter: Sendable {
    /// The topics published; nil allows any prefix (a publisher whose topics are not known).
    let topics: [[UInt8]]?

    init(topics: [String]?) {
        self.topics = topics.map { $0.map { Array($0.utf8) } }
    }

    /// Whether a subscription to `prefix` can ever match an event.
    func allows(_ prefix: some Collection<UInt8>) -> Bool {
        guard let topics else { return true }
        return topics.contains { $0.starts(with: prefix) }
    }

    /// The most distinct subscriptions that `allows` lets one connection hold: every prefix of
    /// every topic, the empty one (everything) included.
    var maximumPerConnection: Int? {
        guard let topics else { return nil }
        var prefixes = Set<[UInt8]>()
        for topic in topics {
            for length in 0...topic.count { prefixes.insert(Array(topic.prefix(length))) }
        }
        return prefixes.count
    }
}
