import EarshotWire
import Synchronization

/// Receives events from an `EventPublisher` on a SUB socket with a loop thread of its own.
///
/// Filters are set before connecting, so nothing published after the connection is up is missed
/// (ZeroMQ's "slow joiner" loses only what was published before). Events that arrive while the
/// consumer is `bufferLimit` events behind replace the oldest waiting ones: a dashboard wants
/// the freshest state, and it sees the loss as a gap in `seq`.
public final class EventSubscriber: Sendable {
    private let loop: TransportLoop
    private let engine: SubscriberEngine
    /// The stream of events (one consumer). It ends when the subscriber is closed.
    public let events: AsyncStream<Earshot_V1_EventEnvelope>

    /// Subscribes to every topic that starts with one of `topics` (`[""]`: all), then connects.
    public convenience init(endpoint: String, topics: [String], security: ClientSecurity? = nil) throws(TransportError) {
        try self.init(endpoint: endpoint, topics: topics, bufferLimit: 10_000, security: security)
    }

    /// With `security`, the CURVE keys; a server that refuses them sends nothing (no error
    /// comes back: ZeroMQ just keeps retrying the connection).
    public init(endpoint: String, topics: [String], bufferLimit: Int, receiveHighWaterMark: Int32 = 10_000,
                security: ClientSecurity? = nil) throws(TransportError) {
        let socket = try ZMQSocket(.sub)
        try socket.set(.linger, 0)
        try socket.set(.receiveHighWaterMark, receiveHighWaterMark)
        try socket.set(.heartbeatInterval, 2000)
        try socket.set(.heartbeatTimeout, 6000)
        try socket.set(.heartbeatTTL, 6000)
        try security?.apply(to: socket)
        for topic in topics {
            try socket.set(.subscribe, Array(topic.utf8))
        }
        try socket.connect(endpoint)
        let (events, continuation) = AsyncStream<Earshot_V1_EventEnvelope>.makeStream(
            bufferingPolicy: .bufferingNewest(max(1, bufferLimit)))
        self.events = events
        loop = try TransportLoop()
        engine = SubscriberEngine(socket: socket, continuation: continuation)
        loop.engine.attach(engine)
        loop.start()
    }

    deinit {
        close()
    }

    /// Events dropped because the consumer was behind, or because they did not decode.
    public var dropped: Int { engine.dropped.load(ordering: .relaxed) }

    /// Closes the socket and ends `events`.
    public func close() {
        loop.stop()
    }
}
