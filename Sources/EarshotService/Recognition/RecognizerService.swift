import EarshotCore
import EarshotLive
import EarshotSync
import EarshotTransport
import EarshotWire
import FoundationEssentials

/// `earshot.v1.Recognizer`: the managed session over RPC, and one-off signatures.
final class RecognizerService: Sendable {
    private let session: ManagedSession
    private let feed: MatchFeed
    /// Where `add_to_library` puts matches (nil: the library is turned off).
    private let library: LibraryService?
    /// For MatchSignature. A matcher serves one call at a time; such calls are rare and fast.
    private let signatureMatcher: Locked<CatalogSetMatcher>

    init(session: ManagedSession, catalogs: CatalogSet, feed: MatchFeed, library: LibraryService?) {
        self.session = session
        self.feed = feed
        self.library = library
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
        server.register(Methods.Recognizer.match, role: .operator) { [self] request, call throws(RpcError) in
            var result = try await match(call)
            if request.addToLibrary { result.library = await addToLibrary(result, call) }
            return result
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

    /// Adds a result to the caller's library; the published copy of the result never carries this.
    private func addToLibrary(_ result: Earshot_V1_MatchResult, _ call: RpcCall) async -> Earshot_V1_LibraryAddStatus {
        guard let library else {
            var status = Earshot_V1_LibraryAddStatus()
            status.code = RpcStatusCode.unavailable.rawValue
            status.message = "the library is turned off (library.enabled = false)"
            return status
        }
        return await library.addMatch(result, owner: LibraryService.owner(of: call))
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
            var message = feed.record(r.result, from: .stream, streamTime: r.streamTime, isRepeat: r.isRepeat)
            if r.isRepeat, !request.includeRepeats { continue }
            if request.addToLibrary, !r.isRepeat, message.outcome == .match { message.library = await addToLibrary(message, call) }
            try writer.send(message)
        }
        if let reason = call.cancellationReason() { throw reason }
    }
}
