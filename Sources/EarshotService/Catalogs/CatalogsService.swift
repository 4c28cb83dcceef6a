import EarshotCore
import EarshotCrypto
import EarshotStore
import EarshotSystem
import EarshotTransport
import EarshotWire
import FoundationEssentials
import Logging

/// `earshot.v1.Catalogs`: what the daemon holds, and installing catalogs over the network.
///
/// Uploads follow docs/PROTOCOL.md ("Catalog upload"): BeginUpload (resumes an upload of the
/// same name, size and digest), UploadChunk at explicit offsets, CommitUpload (digest, full
/// verification, signature, fsync, rename into the catalogs folder, swap), or AbortUpload.
/// Everything that touches files runs on the registry's queue, never on the RPC threads.
final class CatalogsService: Sendable {
    private let registry: CatalogRegistry
    private let uploads: UploadBox
    private let trust: CatalogCheck.Trust
    private let events: DaemonEvents
    private let logger: Logger

    /// The upload area is not thread-safe: only the registry's queue touches it.
    final class UploadBox: @unchecked Sendable {
        let area: UploadArea
        init(_ area: UploadArea) { self.area = area }
    }

    init(registry: CatalogRegistry, uploads: UploadArea, trust: CatalogCheck.Trust, events: DaemonEvents, logger: Logger) {
        self.registry = registry
        self.uploads = UploadBox(uploads)
        self.trust = trust
        self.events = events
        self.logger = logger
    }

    // MARK: Summaries

    func summary(_ s: CatalogRegistry.Slot) -> Earshot_V1_CatalogSummary {
        var m: Earshot_V1_CatalogSummary
        if let l = s.loaded {
            m = Earshot_V1_CatalogSummary(name: s.name, catalog: l.catalog, active: s.enabled)
            m.sha256 = SHA256.hex(l.sha256)
            m.installedAt = ISODate.render(l.installedAt)
            m.signerKey = l.signer?.publicKey ?? ""
            m.signerName = l.signer?.name ?? ""
            m.failure = s.failure ?? ""
            m.notice = registry.notice(s.name, l) ?? ""
        } else {
            m = Earshot_V1_CatalogSummary(name: s.name, failure: s.failure ?? "")
            if s.failure == nil { m.state = .loading }
        }
        if s.loading { m.state = .loading }
        m.version = UInt64(s.version)
        m.enabled = s.enabled
        return m
    }

    static func status(_ u: UploadArea.Upload, resumed: Bool = false) -> Earshot_V1_UploadStatus {
        var m = Earshot_V1_UploadStatus()
        m.uploadID = u.id
        m.name = u.name
        m.size = UInt64(u.size)
        m.offset = UInt64(u.held)
        m.resumed = resumed
        m.sha256 = SHA256.hex(u.sha256)
        m.startedAt = ISODate.render(Date(timeIntervalSince1970: u.started))
        m.enable = u.enable
        return m
    }

    /// Every catalog, loaded or failed, by name.
    func summaries() -> [Earshot_V1_CatalogSummary] { registry.all.map(summary) }

    // MARK: RPC

    func register(on server: RpcServer) {
        // Any role may read the catalogs: they are the snapshot of the catalog/ topic, which every
        // subscriber receives anyway. Uploads in progress are an admin's business only, and a
        // viewer's list never waits behind an upload's verification on the queue.
        server.register(Methods.Catalogs.list, role: .viewer) { [self] _, call throws(RpcError) in
            // Heads first (see SessionService.snapshot): an event in between is applied twice, harmlessly.
            var reply = Earshot_V1_ListCatalogsResponse()
            reply.topicSeq = events.publisher.heads
            reply.epoch = events.epoch
            reply.catalogs = summaries()
            if call.role == .admin {
                reply.uploads = try await onQueue { [uploads] () throws(RpcError) in uploads.area.uploads.map { Self.status($0) } }
            }
            return reply
        }
        server.register(Methods.Catalogs.describe, role: .admin) { [self] request, _ throws(RpcError) in
            try describe(try Self.checked(request.name))
        }
        server.register(Methods.Catalogs.enable, role: .admin) { [self] request, _ throws(RpcError) in
            try await setEnabled(try Self.checked(request.name), true)
        }
        server.register(Methods.Catalogs.disable, role: .admin) { [self] request, _ throws(RpcError) in
            try await setEnabled(try Self.checked(request.name), false)
        }
        server.register(Methods.Catalogs.remove, role: .admin) { [self] request, _ throws(RpcError) in
            try await remove(try Self.checked(request.name))
        }
        server.register(Methods.Catalogs.beginUpload, role: .admin) { [self] request, call throws(RpcError) in
            try await begin(request, by: call.clientName ?? "")
        }
        server.register(Methods.Catalogs.uploadChunk, role: .admin) { [self] request, _ throws(RpcError) in
            try await onQueue { [uploads] () throws(RpcError) in
                let outcome = request.data.withUnsafeBytes { bytes in
                    Result { () throws(UploadArea.Problem) in
                        try uploads.area.write(id: request.uploadID, offset: Int(clamping: request.offset), bytes: bytes,
                                               now: Date().timeIntervalSince1970)
                    }
                }
                switch outcome {
                case .success(let u): return Self.status(u)
                case .failure(let problem): throw Self.rpcError(problem)
                }
            }
        }
        server.register(Methods.Catalogs.getUpload, role: .admin) { [self] request, _ throws(RpcError) in
            try await onQueue { [uploads] () throws(RpcError) in
                do throws(UploadArea.Problem) { return Self.status(try uploads.area.upload(id: request.uploadID)) } catch {
                    throw Self.rpcError(error)
                }
            }
        }
        server.register(Methods.Catalogs.abortUpload, role: .admin) { [self] request, _ throws(RpcError) in
            try await onQueue { [uploads, logger] () throws(RpcError) in
                do throws(UploadArea.Problem) {
                    let u = try uploads.area.upload(id: request.uploadID)
                    try uploads.area.abort(id: request.uploadID)
                    logger.notice("upload \(u.id) of catalog \(u.name) aborted at \(u.held) of \(u.size) bytes")
                    return Self.status(u)
                } catch { throw Self.rpcError(error) }
            }
        }
        server.register(Methods.Catalogs.commitUpload, role: .admin) { [self] request, _ throws(RpcError) in
            try await onQueue { () throws(RpcError) in try self.commit(request.uploadID) }
        }
    }

    /// Runs `body` on the registry's queue (file work never blocks the RPC threads).
    private func onQueue<T: Sendable>(_ body: @escaping @Sendable () throws(RpcError) -> T) async throws(RpcError) -> T {
        let result: Result<T, RpcError> = await withCheckedContinuation { continuation in
            registry.queue.async { continuation.resume(returning: Result { () throws(RpcError) in try body() }) }
        }
        return try result.get()
    }

    /// A catalog name from a request, refused (INVALID_ARGUMENT) when no catalog could have it.
    static func checked(_ name: String) throws(RpcError) -> String {
        if let problem = CatalogName.problem(name) { throw RpcError(.invalidArgument, problem) }
        return name
    }

    private func describe(_ name: String) throws(RpcError) -> Earshot_V1_CatalogDescription {
        guard let s = registry.slot(named: name) else {
            throw RpcError(.notFound, "no catalog named \"\(name)\"; List shows the names")
        }
        guard let l = s.loaded else {
            // The request is fine; the file is not in a state to be described.
            throw RpcError(.failedPrecondition, "catalog \"\(name)\" failed to load: \(s.failure ?? "being verified")")
        }
        var reply = Earshot_V1_CatalogDescription()
        reply.summary = summary(s)
        for index in 0..<l.catalog.referenceCount {
            var r = Earshot_V1_ReferenceDescription()
            r.index = UInt32(index)
            r.durationSeconds = l.catalog.references[index].duration
            r.mediaItems = l.catalog.mediaItems(ofReference: index).map(Earshot_V1_MediaItem.init)
            reply.references.append(r)
        }
        return reply
    }

    private func setEnabled(_ name: String, _ enabled: Bool) async throws(RpcError) -> Earshot_V1_CatalogSummary {
        try await onQueue { [registry] () throws(RpcError) in
            guard let existing = registry.slot(named: name) else {
                throw RpcError(.notFound, "no catalog named \"\(name)\"; List shows the names")
            }
            guard existing.loaded != nil else {
                throw RpcError(.failedPrecondition, "catalog \"\(name)\" has no version that verified: \(existing.failure ?? "being verified")")
            }
            guard let s = registry.setEnabled(name, enabled) else { throw RpcError(.notFound, "no catalog named \"\(name)\"") }
            return self.summary(s)
        }
    }

    private func remove(_ name: String) async throws(RpcError) -> Earshot_V1_RemoveCatalogResponse {
        try await onQueue { [registry] () throws(RpcError) in
            guard registry.slot(named: name) != nil else {
                throw RpcError(.notFound, "no catalog named \"\(name)\"; List shows the names")
            }
            // The file first: a crash after it leaves no catalog, as asked.
            do throws(SystemError) { try Directory.remove(registry.path(of: name)) } catch {
                throw RpcError(.internal, "cannot delete the catalog file: \(error.message)")
            }
            guard let s = registry.forget(name) else { throw RpcError(.notFound, "no catalog named \"\(name)\"") }
            var reply = Earshot_V1_RemoveCatalogResponse()
            reply.removed = self.summary(s)
            return reply
        }
    }

    private func begin(_ request: Earshot_V1_BeginUploadRequest, by client: String) async throws(RpcError) -> Earshot_V1_UploadStatus {
        // Refused before any byte is sent: what CommitUpload would refuse after them all.
        if case .authors(let authors) = trust {
            guard !request.signerKey.isEmpty else {
                throw RpcError(.permissionDenied, "catalog \"\(request.name)\" is unsigned: this box accepts only catalogs signed by a trusted author (sign with `earshot catalog sign`; give signer_key)")
            }
            if !authors.contains(where: { $0.publicKey == Array(request.signerKey) }) {
                let key = request.signerKey.count == Ed25519.publicKeyBytes ? Z85.encode(Array(request.signerKey)) : "a malformed key"
                throw RpcError(.permissionDenied, "catalog \"\(request.name)\" is signed by \(key), which is not in this box's trusted authors file")
            }
        }
        return try await onQueue { [uploads, logger] () throws(RpcError) in
            do throws(UploadArea.Problem) {
                // A size past Int.max is past every limit: refused as too large like any other.
                let (u, resumed) = try uploads.area.begin(name: request.name, size: Int(clamping: request.size), sha256: Array(request.sha256),
                                                          enable: request.enable, now: Date().timeIntervalSince1970)
                if resumed {
                    logger.info("upload \(u.id) of catalog \(u.name) resumed by \(client.isEmpty ? "a client" : client) at \(u.held) of \(u.size) bytes")
                } else {
                    logger.info("upload \(u.id) of catalog \(u.name) (\(u.size) bytes) begun by \(client.isEmpty ? "a client" : client)")
                }
                return Self.status(u, resumed: resumed)
            } catch { throw Self.rpcError(error) }
        }
    }

    /// On the queue: the last steps of an upload. Nothing the daemon serves or holds changes
    /// unless every check passes; a file that fails is deleted (resending it cannot help).
    private func commit(_ id: String) throws(RpcError) -> Earshot_V1_CommitUploadResponse {
        let started = ContinuousClock.now
        let (upload, partPath, known): (UploadArea.Upload, String, [UInt8]?)
        do throws(UploadArea.Problem) { (upload, partPath, known) = try uploads.area.completed(id: id) } catch {
            throw Self.rpcError(error)
        }
        events.publishCatalog(.uploaded, nil, upload: Self.status(upload))
        let verified: CatalogCheck.Verified
        do {
            verified = try CatalogCheck.verify(path: partPath, trust: trust, expectedSHA256: upload.sha256, knownSHA256: known)
        } catch {
            try? uploads.area.abort(id: id)
            logger.error("upload \(id) of catalog \(upload.name) refused: \(error.message)")
            events.publishCatalog(.failed, registry.slot(named: upload.name).map(summary), message: error.message,
                                  upload: Self.status(upload))
            throw Self.rpcError(error, name: upload.name)
        }
        // Read-only once installed: a copy over it in place (which would change the bytes under
        // running matches) fails instead of corrupting it. Best effort.
        Directory.setMode(partPath, 0o444)
        do throws(SystemError) { try Directory.rename(partPath, to: registry.path(of: upload.name)) } catch {
            throw RpcError(.internal, "cannot install the catalog: \(error.message) (the upload is kept; commit again)")
        }
        uploads.area.installed(id: id)
        let installed = CatalogRegistry.Loaded(verified, installedAt: Date(), identity: FileIdentity(path: registry.path(of: upload.name)))
        let (slot, outcome) = registry.install(upload.name, installed, enableIfNew: upload.enable)
        var reply = Earshot_V1_CommitUploadResponse()
        reply.catalog = summary(slot)
        reply.replaced = outcome == .replaced
        reply.installMilliseconds = (ContinuousClock.now - started) / .milliseconds(1)
        return reply
    }

    /// Removes uploads left alone too long (called every minute).
    func expireUploads() {
        registry.queue.async { [uploads, logger] in
            for u in uploads.area.expire(now: Date().timeIntervalSince1970) {
                logger.notice("upload \(u.id) of catalog \(u.name) expired at \(u.held) of \(u.size) bytes (catalogs.upload_expiry_s)")
            }
        }
    }

    static func rpcError(_ p: UploadArea.Problem) -> RpcError {
        switch p.kind {
        case .invalidArgument: RpcError(.invalidArgument, p.message)
        case .notFound: RpcError(.notFound, p.message)
        case .resourceExhausted: RpcError(.resourceExhausted, p.message)
        case .outOfRange: RpcError(.outOfRange, p.message)
        case .failedPrecondition: RpcError(.failedPrecondition, p.message)
        case .internalError: RpcError(.internal, p.message)
        }
    }

    static func rpcError(_ r: CatalogCheck.Refusal, name: String) -> RpcError {
        switch r.kind {
        case .invalid: RpcError(.invalidArgument, "catalog \"\(name)\" is not a valid catalog: \(r.message)")
        case .digestMismatch: RpcError(.dataLoss, "catalog \"\(name)\": \(r.message)")
        case .badSignature: RpcError(.invalidArgument, "catalog \"\(name)\": \(r.message)")
        case .untrusted: RpcError(.permissionDenied, "catalog \"\(name)\" refused: \(r.message)")
        case .stopped: RpcError(.unavailable, "the daemon is stopping")
        }
    }
}
