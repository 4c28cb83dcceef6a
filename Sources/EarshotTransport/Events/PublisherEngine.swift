import EarshotSync
import EarshotSystem
import EarshotWire
import FoundationEssentials

#if canImport(Glibc)
    import Glibc
#endif

/// The publisher's engine: sequence numbers and the outbox under a lock (any thread publishes),
/// the PUB socket and the heartbeat timer on the loop thread.
final class PublisherEngine: LoopAttachment, @unchecked Sendable {
    private struct State {
        var heads: [String: UInt64] = [:]
        var globalSeq: UInt64 = 0
        /// Encoded (topic, envelope) pairs waiting for the loop thread, in seq order.
        var outbox: [([UInt8], [UInt8])] = []
        var statistics = EventPublisherStatistics()
    }

    /// What one connection may ask for: libzmq keeps every subscription a connection sends
    /// (in manual mode too, to unsubscribe it when the connection ends), whether applied or not.
    static let maximumSubscriptionsPerConnection = 64
    static let maximumSubscriptionBytesPerConnection = 1024

    let epoch: UInt64
    let heartbeatInterval: Duration
    let outboxLimit: Int
    /// A configured, unbound XPUB socket.
    let makeSocket: @Sendable () throws(TransportError) -> ZMQSocket
    let loop: LoopEngine
    let filter: SubscriptionFilter
    let allowList: ClientAllowList?
    let limiter: ConnectionLimiter?
    private let state = Locked(State())

    /// The endpoints as bound (real ports), for binding a new socket in the old one's place.
    /// Set by `start`, before the loop sees the engine.
    private(set) var endpoints: [String] = []

    // Loop thread only.
    /// Nil from a reset until the new socket is bound.
    private var socket: ZMQSocket?
    /// The socket's monitor (each socket has its own).
    private var monitor: SocketMonitor?
    /// Subscriptions asked for on each open connection (by descriptor), and connections cut off
    /// for asking too much whose end libzmq has not reported yet.
    private var asked: [Int32: (count: Int, bytes: Int)] = [:]
    private var cutOff: Set<Int32> = []
    /// A connection that was cut off has closed: libzmq has freed what it stored for it, but
    /// glibc keeps freed memory in its arenas; the next heartbeat gives it back (`malloc_trim`).
    private var memoryToGiveBack = false
    /// When to try binding the new socket (a closed listener frees its port asynchronously).
    private var rebindAt: ContinuousClock.Instant?
    private var nextHeartbeat: ContinuousClock.Instant
    private var isDetached = false
    /// The wait before the next bind attempt: 20 ms at first, doubling to 1 s (a port another
    /// process took stays taken; each attempt makes a socket and its monitor).
    private var rebindDelay = PublisherEngine.firstRebindDelay
    static let firstRebindDelay: Duration = .milliseconds(20)

    init(epoch: UInt64, heartbeatInterval: Duration, outboxLimit: Int, filter: SubscriptionFilter, allowList: ClientAllowList?,
         limiter: ConnectionLimiter?, makeSocket: @escaping @Sendable () throws(TransportError) -> ZMQSocket, loop: LoopEngine) {
        self.epoch = epoch
        self.heartbeatInterval = heartbeatInterval
        self.outboxLimit = outboxLimit
        self.filter = filter
        self.allowList = allowList
        self.limiter = limiter
        self.makeSocket = makeSocket
        self.loop = loop
        nextHeartbeat = .now + heartbeatInterval
    }

    /// Starts monitoring `socket` (before it binds, so that no connection goes unseen).
    func watch(_ socket: ZMQSocket) throws(TransportError) {
        monitor = try SocketMonitor.start(
            watching: socket, allowList: allowList, limiter: limiter, loop: loop,
            onDisconnect: { [weak self] fd in self?.connectionClosed(fd) })
    }

    /// Takes the first socket, bound on `endpoints`, and joins the loop.
    func start(socket: ZMQSocket, endpoints: [String]) {
        self.socket = socket
        self.endpoints = endpoints
        limiter?.guardListeners(of: ObjectIdentifier(socket), boundTo: endpoints)
        loop.attach(self)
    }

    /// Closes the socket; the limiter lets go of its listeners first.
    private func closeSocket() {
        guard let socket else { return }
        limiter?.forget(ObjectIdentifier(socket))
        socket.close()
        self.socket = nil
        monitor = nil
        asked.removeAll()
        cutOff.removeAll()
    }

    var heads: [String: UInt64] { state.withLock { $0.heads } }
    var statistics: EventPublisherStatistics { state.withLock { $0.statistics } }

    /// Numbers, encodes and queues one event. The lock is held while encoding so that the
    /// outbox stays in seq order; events are small.
    func publish(topic: String, _ envelope: Earshot_V1_EventEnvelope) {
        var envelope = envelope
        let wake = state.withLock { state -> Bool in
            let seq = state.heads[topic, default: 0] + 1
            state.heads[topic] = seq
            state.globalSeq += 1
            envelope.topic = topic
            envelope.epoch = epoch
            envelope.seq = seq
            envelope.globalSeq = state.globalSeq
            envelope.tsUnixMs = Self.unixMilliseconds()
            if case .heartbeat = envelope.body {
                envelope.heartbeat.heads = state.heads
                envelope.heartbeat.globalSeq = state.globalSeq
            }
            guard state.outbox.count < outboxLimit, let bytes: [UInt8] = try? envelope.serializedBytes() else {
                state.statistics.dropped += 1
                return false
            }
            state.outbox.append((Array(topic.utf8), bytes))
            return state.outbox.count == 1
        }
        if wake { loop.enqueue { [self] in flush() } }
    }

    // MARK: LoopAttachment

    /// The socket is an XPUB with manual subscriptions: each subscription arrives here as a
    /// message (1 + prefix, or 0 + prefix to unsubscribe) and takes effect only when applied
    /// right after it is read (libzmq applies it to the connection it came from). Reading them
    /// promptly also keeps a burst from filling the pipe and stalling that connection (libzmq
    /// 4.3.4 can abort on a stalled connection that then fails; see docs/PROTOCOL.md).
    var pollSocket: ZMQSocket? { isDetached ? nil : socket }

    func socketReadable(now: ContinuousClock.Instant) {
        guard let socket else { return }
        var applied = 0, ignored = 0, cut = 0
        for _ in 0..<1024 {
            guard let message = try? socket.receive(maximumFrames: 1), let frame = message.frames.first else { break }
            // Anything else a raw peer sends is not for us.
            guard message.frames.count == 1, !message.truncated, let kind = frame.first, kind <= 1 else { continue }
            // Connections that ended are known before this message's descriptor is looked at.
            monitor?.drain()
            let fd = message.sourceFD
            let prefix = frame.dropFirst()
            // fd -1: libzmq unsubscribing a connection that ended (nothing left to apply to).
            if fd >= 0 {
                if cutOff.contains(fd) { continue }
                var counts = asked[fd, default: (0, 0)]
                counts.count = max(0, counts.count + (kind == 1 ? 1 : -1))
                counts.bytes = max(0, counts.bytes + (kind == 1 ? prefix.count : -prefix.count))
                if counts.count > Self.maximumSubscriptionsPerConnection || counts.bytes > Self.maximumSubscriptionBytesPerConnection {
                    // libzmq cannot refuse to store a subscription, so the connection goes.
                    asked[fd] = nil
                    cutOff.insert(fd)
                    ConnectionLimiter.shutDown(fd)
                    cut += 1
                    continue
                }
                asked[fd] = counts
            }
            guard filter.allows(prefix) else {
                ignored += 1
                continue
            }
            try? socket.set(kind == 1 ? .subscribe : .unsubscribe, Array(prefix))
            if kind == 1 { applied += 1 }
        }
        if applied + ignored + cut > 0 {
            state.withLock {
                $0.statistics.subscriptions += applied
                $0.statistics.ignoredSubscriptions += ignored
                $0.statistics.subscribersCutOff += cut
            }
        }
    }

    /// The socket monitor saw connection `fd` end.
    private func connectionClosed(_ fd: Int32) {
        asked[fd] = nil
        if cutOff.remove(fd) != nil { memoryToGiveBack = true }
    }

    func nextWakeup() -> ContinuousClock.Instant? {
        guard !isDetached else { return nil }
        return rebindAt.map { min($0, nextHeartbeat) } ?? nextHeartbeat
    }

    func timerFired(now: ContinuousClock.Instant) {
        if let at = rebindAt, at <= now { rebind(now: now) }
        guard nextHeartbeat <= now else { return }
        nextHeartbeat += heartbeatInterval
        // After a stall, one heartbeat now and the next a full interval later, not a burst.
        if nextHeartbeat <= now { nextHeartbeat = now + heartbeatInterval }
        var envelope = Earshot_V1_EventEnvelope()
        envelope.heartbeat = Earshot_V1_Heartbeat()
        publish(topic: Topics.heartbeat, envelope)
        flush()
        if memoryToGiveBack {
            // At most once a heartbeat, and only after an abusive subscriber left: a few ms.
            memoryToGiveBack = false
            HeapMemory.giveBack()
        }
    }

    func detached() {
        isDetached = true
        closeSocket()
    }

    /// Closes the socket, which ends every subscriber's connection, and binds a new one on the
    /// same endpoints; subscribers reconnect by themselves through a new CURVE handshake. It is
    /// how a revoked key loses its subscription: libzmq cannot drop one PUB peer.
    func resetSubscribers() {
        loop.enqueue { [self] in
            guard !isDetached else { return }
            closeSocket()
            rebindAt = .now
            state.withLock { $0.statistics.resets += 1 }
        }
    }

    /// Binds a new socket on every endpoint, or tries again shortly (the old listener closes in
    /// libzmq's I/O thread, so its port may still be taken for a moment).
    private func rebind(now: ContinuousClock.Instant) {
        do throws(TransportError) {
            let fresh = try makeSocket()
            do throws(TransportError) { try watch(fresh) } catch {
                fresh.close()
                throw error
            }
            for endpoint in endpoints {
                do throws(TransportError) { try fresh.bind(endpoint) } catch {
                    fresh.close()
                    throw error
                }
            }
            socket = fresh
            limiter?.guardListeners(of: ObjectIdentifier(fresh), boundTo: endpoints)
            rebindAt = nil
            rebindDelay = Self.firstRebindDelay
        } catch {
            rebindAt = now + rebindDelay
            rebindDelay = min(rebindDelay * 2, .seconds(1))
            state.withLock { $0.statistics.rebindFailures += 1 }
        }
    }

    /// Sends everything queued. PUB never blocks and never says EAGAIN: at a subscriber's
    /// high-water mark libzmq drops that subscriber's copy only.
    private func flush() {
        let batch = state.withLock { state in
            defer { state.outbox.removeAll(keepingCapacity: true) }
            return state.outbox
        }
        guard !batch.isEmpty, !isDetached else { return }
        guard let socket else {
            // Between a reset and the new socket nobody is connected to receive them.
            state.withLock { $0.statistics.dropped += batch.count }
            return
        }
        var sent = 0
        for (topic, envelope) in batch where socket.send([topic, envelope]) == .sent {
            sent += 1
        }
        state.withLock {
            $0.statistics.published += sent
            $0.statistics.dropped += batch.count - sent
        }
    }

    private static func unixMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }
}
