import EarshotSync
import EarshotWire
import FoundationEssentials
import Synchronization

/// The server's engine: the ROUTER socket and every call in flight, on the loop thread.
///
/// The loop thread only routes: it checks envelopes, applies the limits, starts each handler
/// as a task and sends what the tasks hand back. It never blocks on a peer: a full queue ends
/// the stream it was for (RESOURCE_EXHAUSTED), and an END that finds the queue full is retried
/// for a while on a timer rather than waited for. Nothing it does for one message costs much:
/// envelopes are judged on their wire bytes before they are copied (`EnvelopePrecheck`).
///
/// It knows which TCP connection each client's messages come on (`ZMQ_SRCFD`), and hears from
/// the socket monitor when one closes: the calls of a client that is gone are cancelled at once
/// rather than left to their deadlines.
final class RpcServerEngine: LoopAttachment, @unchecked Sendable {
    /// An END that met a full queue.
    private struct UnsentReply {
        let peer: PeerID
        let frames: [[UInt8]]
        let giveUpAt: ContinuousClock.Instant
    }

    /// How often unsent ENDs are retried, and for how long.
    private static let retryInterval: Duration = .milliseconds(10)
    private static let retryPeriod: Duration = .seconds(5)
    private static let maximumUnsentReplies = 4096
    /// Messages handled per wake-up before the loop looks at its other sockets.
    private static let receiveBatch = 256

    let loop: LoopEngine
    let socket: ZMQSocket
    let configuration: RpcServer.Configuration

    // Any thread.
    let handlers = Locked<[String: MethodHandler]>([:])
    let accepting = Atomic<Bool>(true)
    /// Handlers running now.
    let running = Atomic<Int>(0)
    let counters = Locked(RpcServerStatistics())

    // Loop thread only.
    private var calls: [CallKey: ServerCall] = [:]
    private var admission: CallAdmission
    /// Which client each open TCP connection (by descriptor) carries, and back.
    private var peerOnConnection: [Int32: PeerID] = [:]
    private var connectionOfPeer: [PeerID: Int32] = [:]
    /// Watches the socket's connections; nil until `attach(monitor:)`.
    private var monitor: SocketMonitor?
    /// No call ends before this (it may be stale-early, never late): saves scanning every call
    /// on every turn of the loop.
    private var earliestDeadline: ContinuousClock.Instant?
    private var unsentReplies: [UnsentReply] = []
    private var lastLostPeer: PeerID?
    private var isDetached = false

    init(loop: LoopEngine, socket: ZMQSocket, configuration: RpcServer.Configuration) {
        self.loop = loop
        self.socket = socket
        self.configuration = configuration
        admission = CallAdmission(limits: configuration.admissionLimits)
    }

    /// Hands the socket's monitor over (before the loop sees either).
    func attach(monitor: SocketMonitor) {
        self.monitor = monitor
    }

    // MARK: LoopAttachment

    var pollSocket: ZMQSocket? { isDetached ? nil : socket }

    func socketReadable(now: ContinuousClock.Instant) {
        let limits = (entries: configuration.maximumMetadataEntries, bytes: configuration.maximumMetadataBytes)
        let plain = configuration.security == nil
        for _ in 0..<Self.receiveBatch {
            var verdict = EnvelopePrecheck.Verdict.decode
            let message: ZMQReceivedMessage?
            do {
                // Frame 2 is the envelope: judged in place, and not even copied when refused.
                message = try socket.receive(maximumFrames: 3, peerAddress: plain) { index, bytes in
                    guard index == 2 else { return true }
                    verdict = EnvelopePrecheck.check(bytes, maximumEntries: limits.entries, maximumBytes: limits.bytes)
                    return verdict == .decode
                }
            } catch {
                return
            }
            guard let message, let routingID = message.frames.first else { return }
            let peer = PeerID(bytes: routingID)
            // Connections that closed are known before this message's connection is noted: its
            // descriptor may be one libzmq took back from a closed connection and gave again.
            monitor?.drain()
            noteConnection(message.sourceFD, of: peer)
            if case .decode = verdict {
                handle(message, peer: peer, now: now)
                continue
            }
            // The envelope was judged without being copied; the same rules as below apply.
            guard message.frameCount == 3 else {
                counters.withLock { $0.droppedFrames += 1 }
                continue
            }
            let signatureMatches = message.frames.count > 1 && message.frames[1] == WireCoding.signature
            if signatureMatches, case .refuse(let requestID, let problem) = verdict, requestID != 0 {
                sendEnd(to: peer, requestID: requestID, error: RpcError(.invalidArgument, problem))
            } else {
                counters.withLock { if signatureMatches { $0.droppedEnvelopes += 1 } else { $0.droppedFrames += 1 } }
            }
        }
    }

    func nextWakeup() -> ContinuousClock.Instant? {
        var next = earliestDeadline
        if !unsentReplies.isEmpty {
            let retry = ContinuousClock.now + Self.retryInterval
            next = next.map { min($0, retry) } ?? retry
        }
        return next
    }

    func timerFired(now: ContinuousClock.Instant) {
        if let earliest = earliestDeadline, earliest <= now { expireCalls(now: now) }
        if !unsentReplies.isEmpty { retryUnsent(now: now) }
    }

    func detached() {
        isDetached = true
        for call in calls.values where !call.ended {
            cancel(call, RpcError(.unavailable, "the server is shutting down"), notifyPeer: false)
        }
        unsentReplies.removeAll()
        // Its listeners close with it: the limiter must not touch those descriptors again.
        configuration.connectionLimiter?.forget(ObjectIdentifier(socket))
        socket.close()
    }

    // MARK: Incoming messages

    private func handle(_ message: ZMQReceivedMessage, peer: PeerID, now: ContinuousClock.Instant) {
        guard message.frames.count == 3, !message.truncated else {
            counters.withLock { $0.droppedFrames += 1 }
            return
        }
        let signatureMatches = message.frames[1] == WireCoding.signature
        guard
            let envelope = try? Earshot_V1_RequestEnvelope(
                serializedBytes: message.frames[2], options: WireCoding.decodingOptions),
            envelope.requestID != 0
        else {
            counters.withLock {
                if signatureMatches { $0.droppedEnvelopes += 1 } else { $0.droppedFrames += 1 }
            }
            return
        }
        guard signatureMatches else {
            let shown = WireCoding.printable(message.frames[1])
            sendEnd(to: peer, requestID: envelope.requestID,
                    error: RpcError(.unimplemented, "unsupported protocol \"\(shown)\"; this server speaks \(rpcSignature)"))
            return
        }
        switch envelope.control {
        case .call:
            accept(envelope, from: peer, userID: message.userID, address: message.peerAddress, now: now)
        case .cancel:
            if let call = calls[CallKey(peer: peer, requestID: envelope.requestID)], !call.ended {
                cancel(call, RpcError(.cancelled, "cancelled by the client"), notifyPeer: true)
            }
        case .ping:
            var pong = Earshot_V1_ResponseEnvelope()
            pong.requestID = envelope.requestID
            pong.kind = .pong
            deliver(pong, to: peer, retry: false)
        case .UNRECOGNIZED(let value):
            sendEnd(to: peer, requestID: envelope.requestID,
                    error: RpcError(.unimplemented, "unsupported control \(value)"))
        }
    }

    private func accept(_ envelope: Earshot_V1_RequestEnvelope, from peer: PeerID, userID: String?, address: String?,
                        now: ContinuousClock.Instant) {
        let key = CallKey(peer: peer, requestID: envelope.requestID)
        // ZAP ran at the handshake; the allow-list may have changed since, so look again.
        let identity: CallDecision.Identity = configuration.security.map { security in
            .key(userID.flatMap(security.allowList.entry(forUserID:)))
        } ?? .address(address, userID: userID)
        let facts = CallDecision.Facts(
            requestID: envelope.requestID, method: envelope.method, metadata: envelope.metadata,
            timeoutMilliseconds: envelope.timeoutMs, duplicate: calls[key] != nil,
            accepting: accepting.load(ordering: .relaxed), handler: handlers.withLock { $0[envelope.method] },
            caller: identity)
        switch CallDecision.decide(facts, on: peer, admission: admission, configuration: configuration) {
        case .refuse(let error, let count):
            switch count {
            case .none: break
            case .denied: counters.withLock { $0.denied += 1 }
            case .rejected(let reason):
                counters.withLock {
                    $0.rejected += 1
                    $0.lastRejection = reason
                }
            }
            sendEnd(to: peer, requestID: envelope.requestID, error: error)
        case .start(let start):
            self.start(envelope, start, key: key, now: now)
        }
    }

    /// Starts an admitted call's handler as a task; the loop hears when it returns.
    private func start(_ envelope: Earshot_V1_RequestEnvelope, _ start: CallDecision.Start, key: CallKey,
                       now: ContinuousClock.Instant) {
        let (handler, caller, timeout, id) = (start.handler, start.caller, start.timeout, envelope.requestID)
        let deadline = now + timeout
        let call = ServerCall(
            key: key,
            call: RpcCall(method: envelope.method, requestID: id, peer: key.peer.description,
                          metadata: envelope.metadata, deadline: deadline, userID: start.userID, role: caller.role),
            timeout: timeout, caller: caller)
        calls[key] = call
        admission.add(caller)
        earliestDeadline = earliestDeadline.map { min($0, deadline) } ?? deadline
        counters.withLock { $0.callsByMethod[envelope.method, default: 0] += 1 }

        running.wrappingAdd(1, ordering: .relaxed)
        let payload = envelope.payload
        let sink = StreamSink(server: self, call: call)
        call.task = Task.detached { [self] in
            let outcome = await handler.run(payload, call.call, sink)
            call.handlerReturned.store(true, ordering: .releasing)
            loop.enqueue { self.handlerReturned(call, outcome) }
            running.wrappingSubtract(1, ordering: .relaxed)
        }
    }

    // MARK: Call ends

    private func handlerReturned(_ call: ServerCall, _ outcome: HandlerOutcome) {
        if calls[call.key] === call {
            calls[call.key] = nil
            admission.remove(call.caller)
        }
        guard !call.ended, !isDetached else { return }
        call.ended = true
        switch outcome {
        case .ok(let payload):
            sendEnd(to: call.key.peer, requestID: call.key.requestID, itemSeq: call.nextItemSeq, payload: payload, error: nil)
        case .failed(let error):
            sendEnd(to: call.key.peer, requestID: call.key.requestID, itemSeq: call.nextItemSeq, error: error)
        }
    }

    /// Ends `call` now: marks it, cancels its task, and tells the client unless it is gone.
    private func cancel(_ call: ServerCall, _ reason: RpcError, notifyPeer: Bool) {
        guard !call.ended else { return }
        call.ended = true
        call.call.cancel(reason)
        call.task?.cancel()
        if notifyPeer {
            sendEnd(to: call.key.peer, requestID: call.key.requestID, itemSeq: call.nextItemSeq, error: reason)
        }
    }

    private func expireCalls(now: ContinuousClock.Instant) {
        var next: ContinuousClock.Instant?
        for call in calls.values where !call.ended {
            let deadline = call.call.deadline
            if deadline <= now {
                let reason = RpcError(.deadlineExceeded, "the call did not finish within its timeout of \(WireCoding.seconds(call.timeout))")
                cancel(call, reason, notifyPeer: true)
            } else {
                next = next.map { min($0, deadline) } ?? deadline
            }
        }
        earliestDeadline = next
    }

    /// Every call of a peer that left (its connection closed, or a send found it gone) is
    /// cancelled; nothing can reach it.
    private func peerGone(_ peer: PeerID) {
        // Replies still queued for a peer that left all fail; count the peer once.
        if lastLostPeer != peer {
            lastLostPeer = peer
            counters.withLock { $0.peersLost += 1 }
        }
        if let fd = connectionOfPeer.removeValue(forKey: peer), peerOnConnection[fd] == peer {
            peerOnConnection[fd] = nil
        }
        for call in calls.values where call.key.peer == peer && !call.ended {
            cancel(call, RpcError(.cancelled, "the client disconnected"), notifyPeer: false)
        }
        unsentReplies.removeAll { $0.peer == peer }
    }

    /// `peer`'s messages come on connection `fd`.
    private func noteConnection(_ fd: Int32, of peer: PeerID) {
        guard fd >= 0 else { return }
        if let known = peerOnConnection[fd] {
            if known == peer { return }
            // The descriptor carries another client now: the one it carried has closed.
            peerGone(known)
        }
        if let previous = connectionOfPeer[peer], previous != fd, peerOnConnection[previous] == peer {
            // A client that chose its own routing id came back on a new connection.
            peerOnConnection[previous] = nil
        }
        peerOnConnection[fd] = peer
        connectionOfPeer[peer] = fd
    }

    /// The socket monitor saw connection `fd` close (the client left, or stopped answering
    /// heartbeats). Its client's calls end now, not at their deadlines.
    func connectionClosed(_ fd: Int32) {
        guard let peer = peerOnConnection.removeValue(forKey: fd) else { return }
        if connectionOfPeer[peer] == fd { connectionOfPeer[peer] = nil }
        counters.withLock { $0.disconnects += 1 }
        peerGone(peer)
    }

    /// Ends, with UNAUTHENTICATED, the calls of clients whose key left the allow-list: a revoked
    /// key keeps nothing running (not even a stream with a day-long deadline).
    func cancelRevokedCalls() {
        guard let allowList = configuration.security?.allowList else { return }
        var revoked = 0
        for call in calls.values where !call.ended {
            guard let userID = call.call.userID, allowList.entry(forUserID: userID) == nil else { continue }
            cancel(call, RpcError(.unauthenticated, "this client's key was removed from the server's allow-list"), notifyPeer: true)
            revoked += 1
        }
        if revoked > 0 { counters.withLock { $0.revokedCalls += revoked } }
    }

    /// Stops new calls; those in flight go on.
    func stopAccepting() {
        accepting.store(false, ordering: .relaxed)
    }

    /// Ends every call still in flight with `reason` (at shutdown).
    func cancelAll(_ reason: RpcError) {
        for call in calls.values where !call.ended {
            cancel(call, reason, notifyPeer: true)
        }
    }

    // MARK: Sending

    /// Sends one stream item for a handler (on the loop thread, in the order the handler sent).
    func sendItem(_ payload: Data, of call: ServerCall) {
        call.queuedItems.wrappingSubtract(1, ordering: .relaxed)
        guard !call.ended, !isDetached else { return }
        var envelope = Earshot_V1_ResponseEnvelope()
        envelope.requestID = call.key.requestID
        envelope.kind = .message
        envelope.itemSeq = call.nextItemSeq
        envelope.payload = payload
        guard let frames = frames(envelope, to: call.key.peer) else { return }
        switch socket.send(frames) {
        case .sent:
            call.nextItemSeq += 1
        case .wouldBlock:
            cancel(call, RpcError(.resourceExhausted, "the client is not reading its stream fast enough (send queue full)"),
                   notifyPeer: true)
        case .unreachable:
            peerGone(call.key.peer)
        case .failed(let error):
            cancel(call, RpcError(.internal, error.description), notifyPeer: true)
        }
    }

    private func sendEnd(to peer: PeerID, requestID: UInt64, itemSeq: UInt32 = 0, payload: Data = Data(), error: RpcError?) {
        var envelope = Earshot_V1_ResponseEnvelope()
        envelope.requestID = requestID
        envelope.kind = .end
        envelope.itemSeq = itemSeq
        envelope.payload = payload
        envelope.status = error?.status ?? Earshot_V1_Status()
        let code = error?.code ?? .ok
        counters.withLock { $0.callsByStatus[code, default: 0] += 1 }
        deliver(envelope, to: peer, retry: true)
    }

    private func frames(_ envelope: Earshot_V1_ResponseEnvelope, to peer: PeerID) -> [[UInt8]]? {
        guard let bytes: [UInt8] = try? envelope.serializedBytes() else {
            counters.withLock { $0.droppedReplies += 1 }
            return nil
        }
        return [peer.bytes, WireCoding.signature, bytes]
    }

    /// Sends a reply; an END that meets a full queue is kept and retried (`retry`), anything else
    /// that cannot be sent is dropped and counted.
    private func deliver(_ envelope: Earshot_V1_ResponseEnvelope, to peer: PeerID, retry: Bool) {
        guard !isDetached, let frames = frames(envelope, to: peer) else { return }
        switch socket.send(frames) {
        case .sent:
            break
        case .wouldBlock:
            if retry && unsentReplies.count < Self.maximumUnsentReplies {
                unsentReplies.append(UnsentReply(peer: peer, frames: frames, giveUpAt: .now + Self.retryPeriod))
            } else {
                counters.withLock { $0.droppedReplies += 1 }
            }
        case .unreachable:
            counters.withLock { $0.droppedReplies += 1 }
            peerGone(peer)
        case .failed:
            counters.withLock { $0.droppedReplies += 1 }
        }
    }

    private func retryUnsent(now: ContinuousClock.Instant) {
        var kept: [UnsentReply] = []
        var gone: Set<PeerID> = []
        var dropped = 0
        for reply in unsentReplies {
            if gone.contains(reply.peer) { continue }
            switch socket.send(reply.frames) {
            case .sent:
                break
            case .wouldBlock:
                if reply.giveUpAt > now { kept.append(reply) } else { dropped += 1 }
            case .unreachable:
                gone.insert(reply.peer)
                dropped += 1
            case .failed:
                dropped += 1
            }
        }
        unsentReplies = kept
        if dropped > 0 { counters.withLock { $0.droppedReplies += dropped } }
        for peer in gone { peerGone(peer) }
    }
}
