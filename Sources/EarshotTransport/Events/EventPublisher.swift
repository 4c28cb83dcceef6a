import EarshotWire

/// Publishes events on a PUB-style socket (an XPUB, so that it sees and can refuse
/// subscriptions): frames `topic | EventEnvelope`, with a per-topic seq from 1,
/// a global seq, the daemon's epoch and a timestamp, and a heartbeat on `Topics.heartbeat`
/// carrying every topic's head.
///
/// Publishing never blocks the caller or the loop: a subscriber that stops reading loses its own
/// events at its high-water mark (and sees the gap in seq); the others are not affected.
public final class EventPublisher: Sendable {
    let engine: PublisherEngine
    private let loop: TransportLoop
    /// The endpoints as bound, with real ports.
    public let boundEndpoints: [String]

    /// Binds every endpoint now; with `security`, only allow-listed clients can connect. `epoch`
    /// should be random per process start, so subscribers can tell a restart (seqs start again
    /// from 1) from lost events. `topics`: what will be published (heartbeats are added);
    /// subscriptions that cannot match one of them are ignored (nil: any prefix is applied).
    /// `connectionLimiter` caps connections together with the other sockets sharing it.
    public init(
        loop: TransportLoop, endpoints: [String], epoch: UInt64, heartbeatInterval: Duration = .seconds(1),
        sendHighWaterMark: Int32 = 10_000, security: ServerSecurity? = nil, topics: [String]? = nil,
        connectionLimiter: ConnectionLimiter? = nil
    ) throws(TransportError) {
        let makeSocket = { @Sendable () throws(TransportError) -> ZMQSocket in
            // XPUB is PUB to subscribers; it also shows the application each subscription.
            let socket = try ZMQSocket(.xpub)
            try socket.set(.xpubManual, true)
            try socket.set(.linger, 0)
            try socket.set(.sendHighWaterMark, sendHighWaterMark)
            // Only the handshake (a few hundred bytes) and subscriptions (a topic prefix of at
            // most 21 bytes) come in. A longer message ends the connection in libzmq's decoder,
            // before its trie stores the prefix, which costs it some 40 bytes per byte.
            try socket.set(.maximumMessageSize, 512)
            // libzmq stores every subscription it reads (in its trie, even in manual mode) before
            // the application sees it and can cut the connection off, and it reads on while its
            // I/O thread keeps the queue from emptying: with room for one subscription (libzmq
            // counts the connection's credential, which it never hands over, as the other) the
            // queue empties between reads, and the daemon gets to cut a flooder off.
            try socket.set(.receiveHighWaterMark, 2)
            // And what the kernel holds for one connection while the daemon is busy (Linux
            // doubles this: 32 KiB) is all a flood queues up there.
            try socket.set(.receiveBuffer, 16_384)
            try PeerLiveness.apply(to: socket, timeout: .seconds(6))
            // A connection that has not finished its handshake in 5 s is a scanner or broken:
            // don't let such connections pile up for libzmq's default 30 s.
            try socket.set(.handshakeInterval, 5000)
            try socket.set(.backlog, ConnectionLimiter.listenBacklog)
            // Every listed role may subscribe, so the allow-list alone decides.
            try security?.apply(to: socket)
            return socket
        }
        let socket = try makeSocket()
        let engine = PublisherEngine(
            epoch: epoch, heartbeatInterval: heartbeatInterval, outboxLimit: Int(max(1, sendHighWaterMark)),
            filter: SubscriptionFilter(topics: topics.map { $0 + [Topics.heartbeat] }),
            allowList: security?.allowList, limiter: connectionLimiter, makeSocket: makeSocket, loop: loop.engine)
        var bound: [String] = []
        do throws(TransportError) {
            try engine.watch(socket)
            for endpoint in endpoints {
                try socket.bind(endpoint)
                bound.append(try socket.lastEndpoint())
            }
        } catch {
            socket.close()
            throw error
        }
        engine.start(socket: socket, endpoints: bound)
        boundEndpoints = bound
        self.loop = loop
        self.engine = engine
        // A removed key must lose its subscription too; the engine is held weakly, the list may
        // outlive this publisher.
        security?.allowList.onRemoval { [weak engine] in engine?.resetSubscribers() }
    }

    deinit {
        loop.engine.detach(engine)
    }

    /// Assigns seq (per topic, from 1), global_seq, epoch, topic and ts synchronously (under a
    /// lock, so `heads` include it at once), then queues the send to the loop. Never blocks;
    /// drops (counted, with the seq used) when the loop is `sendHighWaterMark` events behind.
    /// `fill` sets the body; the numbering fields are overwritten.
    public func publish(topic: String, _ fill: (inout Earshot_V1_EventEnvelope) -> Void) {
        var envelope = Earshot_V1_EventEnvelope()
        fill(&envelope)
        engine.publish(topic: topic, envelope)
    }

    /// The last seq of every topic published so far (heartbeats included).
    public var heads: [String: UInt64] { engine.heads }

    public var statistics: EventPublisherStatistics { engine.statistics }

    /// Ends every subscriber's connection; each reconnects through a new handshake. The daemon
    /// needs this when a key leaves the allow-list (it happens by itself then). Events published
    /// until a subscriber is back are lost to it, which it sees as a gap in seq.
    public func resetSubscribers() {
        engine.resetSubscribers()
    }
}
