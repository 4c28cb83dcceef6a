import EarshotCore
import EarshotLive
import EarshotSync
import EarshotTransport
import EarshotWire
import Foundation

/// `earshot.v1.Recognizer`: the managed session over RPC, and one-off signatures.
final class RecognizerService: Sendable {
    private let session: ManagedSession
    private let catalogName: String
    private let events: DaemonEvents
    private let counters: DaemonCounters
    /// For MatchSignature. A matcher serves one call at a time; such calls are rare and fast.
    private let signatureMatcher: Locked<Matcher>

    init(session: ManagedSession, catalog: CatalogStore.Entry, events: DaemonEvents, counters: DaemonCounters) {
        self.session = session
        catalogName = catalog.name
        self.events = events
        self.counters = counters
        signatureMatcher = Locked(Matcher(catalog: catalog.catalog))
    }

    func register(on server: RpcServer) {
        server.register(Methods.Recognizer.prepare, role: .operator) { [session] _, _ throws(RpcError) in
            session.prepare()
            var reply = Earshot_V1_PrepareResponse()
            reply.state = Earshot_V1_SessionState(session.state == .idle ? .prerecording : session.state)
            return reply
        }
        server.register(Methods.Recognizer.match, role: .operator) { [self] _, call throws(RpcError) in
            try await match(call)
        }
        server.register(streaming: Methods.Recognizer.streamMatches, role: .operator) { [self] request, call, writer throws(RpcError) in
            try await stream(request, call, writer)
        }
        server.register(Methods.Recognizer.matchSignature, role: .operator) { [self] request, _ throws(RpcError) in
            let signature: Signature
            do throws(EarshotError) { signature = try Signature(dataRepresentation: Array(request.signature)) } catch {
                throw RpcError(.invalidArgument, "signature: \(error.message)")
            }
            let result = signatureMatcher.withLock { $0.match(signature) }
            counters.add(result)
            return Earshot_V1_MatchResult(result, catalog: catalogName, streamTime: signature.duration)
        }
        server.register(Methods.Recognizer.cancel, role: .operator) { [session] _, _ throws(RpcError) in
            session.cancel()
            var reply = Earshot_V1_CancelResponse()
            reply.state = .idle
            return reply
        }
    }

    /// One result, or DEADLINE_EXCEEDED / CANCELLED when the call ends first (the session's
    /// attempt goes on and answers nobody).
    private func match(_ call: RpcCall) async throws(RpcError) -> Earshot_V1_MatchResult {
        let session = self.session
        // Whichever ends first: the session's answer, or the call (the transport cancels this
        // handler's task at a deadline, a CANCEL or a lost peer). The session's attempt cannot be
        // interrupted; if the call ends first it answers nobody.
        let answer = OneShot<MatchResult?>()
        Task { answer.deliver(await session.result()) }
        let outcome = await withTaskCancellationHandler {
            await answer.value()
        } onCancel: {
            answer.deliver(nil)
        }
        guard let outcome else {
            throw call.cancellationReason() ?? RpcError(.cancelled, "the call was cancelled")
        }
        counters.add(outcome)
        let heard = session.status.heard
        let reply = Earshot_V1_MatchResult(outcome, catalog: catalogName, streamTime: heard)
        events.publishMatch(reply)
        return reply
    }

    private func stream(_ request: Earshot_V1_StreamMatchesRequest, _ call: RpcCall,
                        _ writer: RpcStreamWriter<Earshot_V1_MatchResult>) async throws(RpcError) {
        // Iterating ends when the transport cancels this handler's task (the call ended), which
        // also ends the session's `results` for this stream.
        for await r in session.results() {
            counters.add(r.result)
            if r.isRepeat, !request.includeRepeats { continue }
            try writer.send(Earshot_V1_MatchResult(r.result, catalog: catalogName, repeat: r.isRepeat, streamTime: r.streamTime))
        }
        if let reason = call.cancellationReason() { throw reason }
    }
}
