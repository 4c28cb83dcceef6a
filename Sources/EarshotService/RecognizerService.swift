import EarshotCore
import EarshotLive
import EarshotSync
import EarshotTransport
import EarshotWire
import Foundation

/// `earshot.v1.Recognizer`: the managed session over RPC, and one-off signatures.
final class RecognizerService: Sendable {
    private let session: ManagedSession
    private let feed: MatchFeed
    /// For MatchSignature. A matcher serves one call at a time; such calls are rare and fast.
    private let signatureMatcher: Locked<CatalogSetMatcher>

    init(session: ManagedSession, catalogs: CatalogSet, feed: MatchFeed) {
        self.session = session
        self.feed = feed
        signatureMatcher = Locked(CatalogSetMatcher(catalogs))
    }

    /// Matches from now on search `catalogs` (a call matching now finishes first: same lock).
    func setCatalogs(_ catalogs: CatalogSet) {
        signatureMatcher.withLock { $0.use(catalogs) }
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
            return feed.record(result, from: .signature, streamTime: signature.duration)
        }
        server.register(Methods.Recognizer.cancel, role: .operator) { [session] _, _ throws(RpcError) in
            session.cancel()
            var reply = Earshot_V1_CancelResponse()
            reply.state = .idle
            return reply
        }
    }

    /// One result, or DEADLINE_EXCEEDED / CANCELLED when the call ends first: the transport
    /// cancels this handler's task at a deadline, a CANCEL or a lost peer, which withdraws the
    /// session request.
    private func match(_ call: RpcCall) async throws(RpcError) -> Earshot_V1_MatchResult {
        let outcome = await session.result()
        if Task.isCancelled { throw call.cancellationReason() ?? RpcError(.cancelled, "the call was cancelled") }
        return feed.record(outcome, from: .request, streamTime: session.status.heard)
    }

    private func stream(_ request: Earshot_V1_StreamMatchesRequest, _ call: RpcCall,
                        _ writer: RpcStreamWriter<Earshot_V1_MatchResult>) async throws(RpcError) {
        // Iterating ends when the transport cancels this handler's task (the call ended), which
        // also ends the session's `results` for this stream.
        for await r in session.results() {
            let message = feed.record(r.result, from: .stream, streamTime: r.streamTime, isRepeat: r.isRepeat)
            if r.isRepeat, !request.includeRepeats { continue }
            try writer.send(message)
        }
        if let reason = call.cancellationReason() { throw reason }
    }
}
