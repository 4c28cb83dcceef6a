import EarshotSync
import EarshotWire
import FoundationEssentials
import Synchronization

/// The client's engine: a DEALER socket on a loop thread, and the calls waiting for answers.
///
/// Calls are registered under a lock by the calling task and answered from the loop thread.
/// Each has a local deadline, so a call to a server that is down or gone still ends (with
/// DEADLINE_EXCEEDED). Messages that cannot be sent yet (no connection: the socket has
/// `ZMQ_IMMEDIATE`) wait in order in an outbox until the socket is writable or their call ends.
final class RpcClientEngine: LoopAttachment, @unchecked Sendable {
    private struct State {
        var nextID: UInt64 = 1
        var pending: [UInt64: PendingCall] = [:]
        var openStreams = 0
        var closed = false
        /// No pending call ends before this (it may be stale-early, never late).
        var earliestDeadline: ContinuousClock.Instant?
    }

    /// While the outbox is not empty, how often to try it even without a writable event.
    private static let outboxRetry: Duration = .milliseconds(50)
    private static let receiveBatch = 256

    let endpoint: String
    let configuration: RpcClient.Configuration
    let socket: ZMQSocket
    let loop: LoopEngine
    private let state = Locked(State())
    private let everUp = Atomic<Bool>(false)

    /// Whether a handshake with the server has ever succeeded.
    var hasConnected: Bool { everUp.load(ordering: .relaxed) }

    // Loop thread only.
    private var outbox: [(id: UInt64, frames: [[UInt8]])] = []
    private var lastHeard = ContinuousClock.now
    private var lastPing = ContinuousClock.now
    private var isDetached = false
    /// What the socket monitor has seen of the connection.
    private var story = ConnectionStory.noAnswer

    init(endpoint: String, configuration: RpcClient.Configuration, socket: ZMQSocket, loop: LoopEngine) {
        self.endpoint = endpoint
        self.configuration = configuration
        self.socket = socket
        self.loop = loop
    }

    // MARK: Calls (any thread)

    func allocateID() -> UInt64 {
        state.withLock { state in
            defer { state.nextID &+= 1 }
            return state.nextID
        }
    }

    /// The frames of a request, or the error that keeps it from being sent.
    func requestFrames(id: UInt64, method: String, payload: Data, metadata: [String: String], timeout: Duration,
                       control: Earshot_V1_RequestEnvelope.Control) -> Result<[[UInt8]], RpcError> {
        var envelope = Earshot_V1_RequestEnvelope()
        envelope.requestID = id
        envelope.method = method
        envelope.control = control
        envelope.payload = payload
        envelope.metadata = metadata
        // 0 would mean "the server's default"; the client always says what it waits for.
        envelope.timeoutMs = UInt32(clamping: max(1, Int64(timeout.socketMilliseconds)))
        guard let bytes: [UInt8] = try? envelope.serializedBytes() else {
            return .failure(RpcError(.internal, "cannot encode the request envelope"))
        }
        if bytes.count > configuration.maximumRequestBytes {
            return .failure(RpcError(.resourceExhausted,
                "the request is \(bytes.count) bytes; at most \(configuration.maximumRequestBytes) may be sent"))
        }
        return .success([WireCoding.signature, bytes])
    }

    /// Registers call `id` and queues its frames. A call that cannot start is failed at once.
    func start(id: UInt64, waiter: ClientWaiter, timeout: Duration, frames: [[UInt8]], honourTaskCancellation: Bool) {
        let deadline = ContinuousClock.now + timeout
        let refusal = state.withLock { state -> RpcError? in
            if state.closed { return RpcError(.cancelled, "the client was closed") }
            // The cancellation handler runs after Task.isCancelled is set and takes this lock:
            // either it finds the call registered, or this check sees the flag.
            if honourTaskCancellation && Task.isCancelled { return RpcError(.cancelled, "the calling task was cancelled") }
            state.pending[id] = PendingCall(waiter: waiter, deadline: deadline, timeout: timeout)
            state.earliestDeadline = state.earliestDeadline.map { min($0, deadline) } ?? deadline
            if waiter.isStream { state.openStreams += 1 }
            return nil
        }
        if let refusal {
            waiter.fail(refusal)
            return
        }
        let isStream = waiter.isStream
        loop.enqueue { [self] in
            if isStream { lastHeard = max(lastHeard, .now) }
            send(id: id, frames: frames)
        }
    }

    /// Ends call `id` on the client's side (task cancelled, stream dropped) and tells the server.
    func abandon(_ id: UInt64, _ error: RpcError) {
        guard let call = take(id) else { return }
        call.waiter.fail(error)
        loop.enqueue { [self] in withdraw(id) }
    }

    /// Fails every call; later calls fail at once.
    func close() {
        let calls = state.withLock { state -> [PendingCall] in
            state.closed = true
            defer {
                state.pending.removeAll()
                state.openStreams = 0
            }
            return Array(state.pending.values)
        }
        for call in calls { call.waiter.fail(RpcError(.cancelled, "the client was closed")) }
    }

    private func take(_ id: UInt64) -> PendingCall? {
        state.withLock { state in
            guard let call = state.pending.removeValue(forKey: id) else { return nil }
            if call.waiter.isStream { state.openStreams -= 1 }
            return call
        }
    }

    // MARK: LoopAttachment

    var pollSocket: ZMQSocket? { isDetached ? nil : socket }

    var wantsWritable: Bool { !outbox.isEmpty }

    func socketWritable(now: ContinuousClock.Instant) {
        flushOutbox()
    }

    func socketReadable(now: ContinuousClock.Instant) {
        for _ in 0..<Self.receiveBatch {
            guard let message = try? socket.receive(maximumFrames: 2) else { return }
            guard message.frames.count == 2, !message.truncated, message.frames[0] == WireCoding.signature,
                let envelope = try? Earshot_V1_ResponseEnvelope(
                    serializedBytes: message.frames[1], options: WireCoding.decodingOptions)
            else { continue }
            lastHeard = now
            handle(envelope)
        }
    }

    func nextWakeup() -> ContinuousClock.Instant? {
        let (earliest, streams) = state.withLock { ($0.earliestDeadline, $0.openStreams) }
        var next = earliest
        func consider(_ instant: ContinuousClock.Instant) { next = next.map { min($0, instant) } ?? instant }
        if !outbox.isEmpty { consider(.now + Self.outboxRetry) }
        if streams > 0 {
            consider(lastPing + configuration.streamPingInterval)
            consider(lastHeard + configuration.streamSilenceTimeout)
        }
        return next
    }

    func timerFired(now: ContinuousClock.Instant) {
        if !outbox.isEmpty { flushOutbox() }
        expireCalls(now: now)
        let streams = state.withLock { $0.openStreams }
        guard streams > 0 else { return }
        if now - lastHeard >= configuration.streamSilenceTimeout {
            let silent = RpcError(.unavailable,
                "no traffic from \(endpoint) for \(WireCoding.seconds(configuration.streamSilenceTimeout))")
            let ids = state.withLock { state in state.pending.filter { $0.value.waiter.isStream }.map(\.key) }
            for id in ids { abandon(id, silent) }
        } else if now - lastPing >= configuration.streamPingInterval {
            // A PING with an id no call uses: the PONG only refreshes lastHeard.
            lastPing = now
            if case .success(let frames) = requestFrames(
                id: allocateID(), method: "", payload: Data(), metadata: [:], timeout: .seconds(1), control: .ping)
            {
                _ = socket.send(frames)
            }
        }
    }

    func detached() {
        isDetached = true
        outbox.removeAll()
        socket.close()
    }

    // MARK: Loop thread

    private func handle(_ envelope: Earshot_V1_ResponseEnvelope) {
        let id = envelope.requestID
        switch envelope.kind {
        case .pong:
            let isPing = state.withLock { state in
                if case .ping = state.pending[id]?.waiter { true } else { false }
            }
            if isPing, let call = take(id) { call.waiter.succeed(Data()) }
        case .message:
            guard case .stream(let receiver) = state.withLock({ $0.pending[id]?.waiter }) else { return }
            if envelope.itemSeq != receiver.expectedItemSeq {
                abandon(id, RpcError(.dataLoss, "stream item \(receiver.expectedItemSeq) is missing (got \(envelope.itemSeq))"))
                return
            }
            receiver.expectedItemSeq += 1
            if let error = receiver.deliver(envelope.payload) { abandon(id, error) }
        case .end:
            guard let call = take(id) else { return }
            let status = envelope.status
            if status.code != 0 {
                call.waiter.fail(RpcError(status))
            } else if case .stream(let receiver) = call.waiter, envelope.itemSeq != receiver.expectedItemSeq {
                call.waiter.fail(RpcError(.dataLoss,
                    "the stream ended after \(envelope.itemSeq) items; \(receiver.expectedItemSeq) arrived"))
            } else {
                call.waiter.succeed(envelope.payload)
            }
        case .UNRECOGNIZED:
            break
        }
    }

    /// The client's connection story changed (the socket monitor). Once libzmq has given up
    /// on the server (a refused key, a security mismatch), calls not yet sent fail now, as will
    /// later ones: waiting for their deadline would change nothing.
    func connectionChanged(_ story: ConnectionStory) {
        self.story = story
        if story == .up { everUp.store(true, ordering: .relaxed) }
        guard story.isFinal else { return }
        let unsent = outbox.map(\.id)
        outbox.removeAll()
        for id in unsent { fail(id, refusal) }
    }

    private var refusal: RpcError {
        RpcError(.unauthenticated, story.unsentReason(endpoint: endpoint, curve: configuration.security != nil))
    }

    private func send(id: UInt64, frames: [[UInt8]]) {
        guard !isDetached else { return }
        if story.isFinal {
            fail(id, refusal)
            return
        }
        if !outbox.isEmpty {
            outbox.append((id, frames))
            flushOutbox()
            return
        }
        switch socket.send(frames) {
        case .sent: break
        case .wouldBlock, .unreachable: outbox.append((id, frames))
        case .failed(let error): fail(id, RpcError(.unavailable, error.description))
        }
    }

    private func flushOutbox() {
        var sent = 0
        for entry in outbox {
            let result = socket.send(entry.frames)
            if result == .wouldBlock || result == .unreachable { break }
            if case .failed(let error) = result { fail(entry.id, RpcError(.unavailable, error.description)) }
            sent += 1
        }
        outbox.removeFirst(sent)
    }

    /// A call ended on this side: drop its request if still unsent, else tell the server
    /// (`notifyServer`).
    private func withdraw(_ id: UInt64, notifyServer: Bool = true) {
        if let index = outbox.firstIndex(where: { $0.id == id }) {
            outbox.remove(at: index)
            return
        }
        if notifyServer, case .success(let frames) = requestFrames(
            id: id, method: "", payload: Data(), metadata: [:], timeout: .seconds(1), control: .cancel)
        {
            _ = socket.send(frames)
        }
    }

    private func fail(_ id: UInt64, _ error: RpcError) {
        take(id)?.waiter.fail(error)
    }

    private func expireCalls(now: ContinuousClock.Instant) {
        let expired = state.withLock { state -> [(UInt64, PendingCall)] in
            guard let earliest = state.earliestDeadline, earliest <= now else { return [] }
            var expired: [(UInt64, PendingCall)] = []
            var next: ContinuousClock.Instant?
            for (id, call) in state.pending {
                if call.deadline <= now {
                    expired.append((id, call))
                } else {
                    next = next.map { min($0, call.deadline) } ?? call.deadline
                }
            }
            for (id, call) in expired {
                state.pending[id] = nil
                if call.waiter.isStream { state.openStreams -= 1 }
            }
            state.earliestDeadline = next
            return expired
        }
        for (id, call) in expired {
            let within = WireCoding.seconds(call.timeout)
            let message =
                outbox.contains(where: { $0.id == id })
                ? "\(story.unsentReason(endpoint: endpoint, curve: configuration.security != nil)); waited \(within)"
                : call.waiter.isStream
                ? "the stream from \(endpoint) did not end within \(within)" : "no answer from \(endpoint) within \(within)"
            call.waiter.fail(RpcError(.deadlineExceeded, message))
            // No CANCEL: the server got the same timeout and ends the call itself, so its handler
            // learns DEADLINE_EXCEEDED rather than CANCELLED.
            withdraw(id, notifyServer: false)
        }
    }
}
