/// What an event publisher has done since it started.
public struct EventPublisherStatistics: Sendable, Equatable {
    /// Events handed to the socket (heartbeats included).
    public var published = 0
    /// Events that got a seq but were not sent: the loop fell `sendHighWaterMark` events behind,
    /// or the socket refused them. Subscribers see these as gaps. (What ZeroMQ drops for one
    /// slow subscriber at its high-water mark is not visible here: it shows as gaps to that
    /// subscriber only.)
    public var dropped = 0
    /// Times every subscriber was disconnected to make them handshake again (`resetSubscribers`,
    /// or a key removed from the allow-list).
    public var resets = 0
    /// Attempts to bind the new socket after a reset that found the port still taken (retried
    /// after 20 ms, then at doubling intervals up to 1 s).
    public var rebindFailures = 0
    /// Subscriptions applied, and ignored because they could never match a published topic.
    public var subscriptions = 0
    public var ignoredSubscriptions = 0
    /// Subscriber connections closed for asking more than a connection may (64 subscriptions,
    /// 4096 bytes of prefixes).
    public var subscribersCutOff = 0

    public init() {}
}
