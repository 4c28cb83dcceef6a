import EarshotCore
import EarshotCrypto
import EarshotStore
import EarshotSync
import EarshotSystem
import EarshotTransport
import EarshotWire
import FoundationEssentials
import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// `earshot.v1.Library`: each client's library of matched items, private to its key.
///
/// The owner of a call is the caller's allow-list name (`local` without security: every client
/// then shares one library). Writes reply only after their transaction is on disk. Each commit
/// publishes a `LibraryNotice` on library/ (owner hashed, no contents) and wakes that owner's
/// WatchLibrary streams, which read what changed from the database's change log: the log, not
/// the wake-up, is what they send, so a stream never misses or repeats a change.
final class LibraryService: Sendable {
    /// The owner of every call when security is off.
    static let ownerWithoutSecurity = "local"

    private let store: LibraryStore
    private let events: DaemonEvents
    private let logger: Logger
    private let reserveBytes: Int
    private let backupFolder: String
    /// The names in the allow-list now (nil without security).
    private let allowedNames: @Sendable () -> Set<String>?
    private let watchers = Locked<[String: [Int: AsyncStream<Void>.Continuation]]>([:])
    private let stopping = Atomic<Bool>(false)
    private let nextWatcherID = Atomic<Int>(0)
    /// Each owner's watches together read at most `library.catch_up_bytes_per_second`.
    private let pacing: Locked<PacingLedger<String>>
    /// Backups kept in `backupFolder`; older ones are removed after a new one is written.
    static let backupsKept = 5

    init(store: LibraryStore, events: DaemonEvents, configuration c: DaemonConfiguration, logger: Logger,
         allowedNames: @escaping @Sendable () -> Set<String>?) {
        self.store = store
        self.events = events
        self.logger = logger
        reserveBytes = c.libraryReserveBytes
        backupFolder = Path.join(c.stateDirectory, "library-backups")
        self.allowedNames = allowedNames
        pacing = Locked(PacingLedger(unitsPerSecond: c.libraryCatchUpBytesPerSecond, burst: Self.catchUpBurst))
        for name in (try? Directory.names(in: backupFolder)) ?? [] where name.hasSuffix(".partial") {
            try? Directory.remove(Path.join(backupFolder, name))
        }
    }

    /// The daemon stops: open WatchLibrary streams end at once with UNAVAILABLE (a client
    /// resumes from its last version on the next daemon).
    func stop() {
        stopping.store(true, ordering: .releasing)
        for w in watchers.withLock({ $0.values.flatMap(\.values) }) { w.finish() }
    }

    static func owner(of call: RpcCall) -> String {
        call.clientName ?? ownerWithoutSecurity
    }

    func register(on server: RpcServer) {
        server.register(Methods.Library.add, role: .viewer) { [self] request, call throws(RpcError) in
            try await add(request.items, owner: Self.owner(of: call))
        }
        server.register(Methods.Library.items, role: .viewer) { [self] request, call throws(RpcError) in
            try await items(request, call: call)
        }
        server.register(Methods.Library.remove, role: .viewer) { [self] request, call throws(RpcError) in
            let owner = Self.owner(of: call)
            // No disk reserve check: removing is how a full library makes room.
            let commit = try await change { db throws(LibraryError) in try db.remove(request.ids, owner: owner, nowMs: Self.nowMs()) }
            return reply(commit)
        }
        server.register(streaming: Methods.Library.watchLibrary, role: .viewer) { [self] request, call, writer throws(RpcError) in
            try await watch(from: request.fromVersion, owner: Self.owner(of: call), call: call, writer: writer)
        }
        server.register(Methods.Library.listOwners, role: .admin) { [self] _, call throws(RpcError) in
            let owners = try await read(lane: Self.owner(of: call)) { db throws(LibraryError) in
                try db.owners().map { ($0, db.ownerHash($0.name)) }
            }
            let allowed = allowedNames()
            var reply = Earshot_V1_ListLibraryOwnersResponse()
            reply.owners = owners.map { owner, hash in
                var o = Earshot_V1_LibraryOwner()
                o.name = owner.name
                o.ownerHash = hash
                o.version = owner.version
                o.itemCount = UInt32(clamping: owner.itemCount)
                o.bytes = UInt64(owner.bytes)
                o.changedAtUnixMs = owner.changedAtMs
                o.allowed = allowed?.contains(owner.name) ?? (owner.name == Self.ownerWithoutSecurity)
                return o
            }
            return reply
        }
        server.register(Methods.Library.deleteOwner, role: .admin) { [self] request, call throws(RpcError) in
            guard !request.owner.isEmpty else { throw RpcError(.invalidArgument, "owner: which owner's items to delete") }
            try NameRule.check(request.owner, as: "owner")
            let commit = try await change { db throws(LibraryError) in try db.deleteOwner(request.owner, nowMs: Self.nowMs()) }
            logger.notice("library: \(Self.owner(of: call)) deleted the \(commit.changedCount) items of \(request.owner)")
            return reply(commit)
        }
        server.register(Methods.Library.backup, role: .admin) { [self] _, call throws(RpcError) in
            try await backup(by: Self.owner(of: call))
        }
    }

    // MARK: Add

    private func add(_ new: [Earshot_V1_NewLibraryItem], owner: String) async throws(RpcError) -> Earshot_V1_LibraryWriteResponse {
        let now = Self.nowMs()
        var entries: [LibraryEntry] = []
        for (i, n) in new.enumerated() {
            do throws(RpcError) { entries.append(try Self.entry(n, now: now)) } catch {
                throw RpcError(.invalidArgument, "item \(i + 1): \(error.message)")
            }
        }
        try checkSpace()
        let batch = entries
        let commit = try await change { db throws(LibraryError) in try db.add(batch, owner: owner, nowMs: now) }
        return reply(commit)
    }

    /// Adds the top item of `result` to `owner`'s library (Match / StreamMatches with
    /// add_to_library), and says how it went: the match is answered either way.
    func addMatch(_ result: Earshot_V1_MatchResult, owner: String) async -> Earshot_V1_LibraryAddStatus {
        var status = Earshot_V1_LibraryAddStatus()
        guard result.outcome == .match, let top = result.items.first else {
            status.code = RpcStatusCode.failedPrecondition.rawValue
            status.message = "no match to add"
            return status
        }
        var new = Earshot_V1_NewLibraryItem()
        new.item = top
        new.matchedAtUnixMs = result.madeAtUnixMs
        do throws(RpcError) {
            let reply = try await add([new], owner: owner)
            status.version = reply.version
            status.itemIds = reply.items.map(\.id)
        } catch {
            status.code = error.code.rawValue
            status.message = error.message
        }
        return status
    }

    /// A wire item as a database entry, checked.
    static func entry(_ n: Earshot_V1_NewLibraryItem, now: Int64) throws(RpcError) -> LibraryEntry {
        let item = n.item
        guard n.hasItem, !item.catalog.isEmpty else { throw RpcError(.invalidArgument, "a matched item with its catalog is needed") }
        try NameRule.check(item.catalog, as: "catalog")
        for (name, value) in [("confidence", item.confidence), ("match_offset", item.matchOffset),
                              ("predicted_current_match_offset", item.predictedCurrentMatchOffset),
                              ("frequency_skew", item.frequencySkew), ("time_skew", item.timeSkew)] where !value.isFinite {
            throw RpcError(.invalidArgument, "\(name) is not a finite number")
        }
        guard (0...1).contains(item.confidence) else { throw RpcError(.invalidArgument, "confidence \(item.confidence) is outside 0…1") }
        let matchedAt = n.matchedAtUnixMs == 0 ? now : n.matchedAtUnixMs
        guard matchedAt > 0, matchedAt <= now + 86_400_000 else {
            throw RpcError(.invalidArgument, "matched_at_unix_ms \(n.matchedAtUnixMs) is not a time before tomorrow")
        }
        var properties = String(item.mediaItem.customPropertiesJson.trimmingWhitespace())
        if properties.isEmpty { properties = "{}" }
        guard case .object? = JSONValue(jsonText: properties) else {
            throw RpcError(.invalidArgument, "custom_properties_json is not a JSON object")
        }
        let body: [UInt8]
        do { body = try item.serializedBytes() } catch { throw RpcError(.internal, "cannot encode the item: \(error)") }
        return LibraryEntry(matchedAtMs: matchedAt, catalog: item.catalog, catalogVersion: item.catalogVersion,
                            customProperties: properties, body: body)
    }

    // MARK: Items

    private func items(_ request: Earshot_V1_LibraryItemsRequest, call: RpcCall) async throws(RpcError) -> Earshot_V1_LibraryItemsResponse {
        let caller = Self.owner(of: call)
        try NameRule.check(request.owner, as: "owner")
        try NameRule.check(request.catalog, as: "catalog")
        try NameRule.check(request.propertyKey, as: "property_key")
        if !request.owner.isEmpty, request.owner != caller, call.role != .admin {
            throw RpcError(.permissionDenied, "only an admin may read another owner's library")
        }
        let owner = request.owner.isEmpty ? caller : request.owner
        var query = LibraryQuery(limit: request.pageSize == 0 ? 50 : Int(request.pageSize))
        if !request.pageToken.isEmpty {
            guard let cursor = LibraryCursor(token: request.pageToken) else {
                throw RpcError(.invalidArgument, "page_token \"\(request.pageToken)\" is not one this service gave")
            }
            query.after = cursor
        }
        if !request.catalog.isEmpty { query.catalog = request.catalog }
        if request.matchedFromUnixMs != 0 { query.matchedFromMs = request.matchedFromUnixMs }
        if request.matchedBeforeUnixMs != 0 { query.matchedBeforeMs = request.matchedBeforeUnixMs }
        if !request.propertyKey.isEmpty || !request.propertyValueJson.isEmpty {
            guard !request.propertyKey.isEmpty, !request.propertyValueJson.isEmpty else {
                throw RpcError(.invalidArgument, "property_key and property_value_json go together")
            }
            query.property = (request.propertyKey, request.propertyValueJson)
        }
        let q = query
        let (page, hash) = try await read(lane: caller) { db throws(LibraryError) in
            (try db.items(owner: owner, q), db.ownerHash(owner))
        }
        var reply = Earshot_V1_LibraryItemsResponse()
        reply.items = page.items.map(Self.message)
        reply.nextPageToken = page.next?.token ?? ""
        reply.version = page.owner.version
        reply.itemCount = UInt32(clamping: page.owner.itemCount)
        reply.bytes = UInt64(page.owner.bytes)
        reply.ownerHash = hash
        return reply
    }

    static func message(_ item: LibraryItem) -> Earshot_V1_LibraryItem {
        var m = Earshot_V1_LibraryItem()
        m.id = item.id
        m.matchedAtUnixMs = item.entry.matchedAtMs
        m.addedAtUnixMs = item.addedAtMs
        // Stored as the client sent it; an unreadable body is left empty rather than failing the page.
        if let matched = try? Earshot_V1_MatchedMediaItem(serializedBytes: item.entry.body) { m.item = matched }
        return m
    }

    // MARK: Watch

    /// Bounds of one catch-up read, so that no read holds a connection for long: changes (their
    /// ids only) up to this many, or until they list this many ids…
    static let catchUpChanges = 200
    static let catchUpIDs = 1000
    /// …and a change's items read this many at a time, or until their bodies reach this size.
    static let catchUpItems = 64
    static let catchUpBytes = 256 << 10
    /// What a read costs an owner's pace, in bytes: each item its body and this much for the
    /// row's lookup and its message; each change this much and its ids.
    static let costPerItem = 256
    static let costPerChange = 64
    static let costPerID = 40
    /// What an item is booked at before its piece is read (a typical item's cost; the read
    /// settles the difference).
    static let bookingPerItem = 1024
    /// An owner whose watches read nothing for this long may read this long's pace at once: a
    /// thousand items or so catch up without waiting. Short, as a burst runs at full speed.
    static let catchUpBurst = Duration.milliseconds(500)

    private func watch(from version: UInt64, owner: String, call: RpcCall,
                       writer: RpcStreamWriter<Earshot_V1_LibraryChange>) async throws(RpcError) {
        // Registered before the first read: a commit after that read still wakes this stream.
        let (wakes, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = nextWatcherID.add(1, ordering: .relaxed).newValue
        watchers.withLock { $0[owner, default: [:]][id] = continuation }
        if stopping.load(ordering: .acquiring) { continuation.finish() }
        defer { watchers.withLock { $0[owner]?[id] = nil } }
        var iterator = wakes.makeAsyncIterator()
        var at = version
        var caughtUp = false
        following: while !Task.isCancelled {
            let start = at
            let booking = Self.catchUpChanges * Self.costPerChange + Self.catchUpIDs * Self.costPerID
            let read = try await pacedRead(owner: owner, booking: booking) { db throws(LibraryError) in
                let now = try db.owner(named: owner)
                let changes = try db.changes(owner: owner, after: start, limit: Self.catchUpChanges, maximumIDs: Self.catchUpIDs)
                let cost = (changes ?? []).reduce(Self.costPerChange) { $0 + Self.costPerChange + $1.itemIDs.count * Self.costPerID }
                return ((changes, now), cost)
            }
            guard let (changes, state) = read else { break following }
            guard let changes else {
                var resync = Earshot_V1_LibraryChange()
                resync.kind = .resync
                resync.version = state.version
                resync.itemCount = UInt32(clamping: state.itemCount)
                resync.atUnixMs = Self.nowMs()
                try writer.send(resync)
                at = state.version
                continue
            }
            for change in changes {
                var m = Earshot_V1_LibraryChange()
                m.kind = Self.kind(change.kind)
                m.version = change.version
                m.itemIds = change.itemIDs
                if change.kind == .added {
                    guard let items = try await addedItems(change.itemIDs, owner: owner) else { break following }
                    m.items = items
                }
                m.atUnixMs = change.atMs
                m.itemCount = UInt32(clamping: state.itemCount)
                try writer.send(m)
                at = change.version
            }
            if !changes.isEmpty, at < state.version { continue }  // more backlog
            if !caughtUp {
                caughtUp = true
                var current = Earshot_V1_LibraryChange()
                current.kind = .current
                current.version = at
                current.itemCount = UInt32(clamping: state.itemCount)
                current.atUnixMs = Self.nowMs()
                try writer.send(current)
            }
            guard await iterator.next() != nil else { break }
        }
        if let reason = call.cancellationReason() { throw reason }
        if stopping.load(ordering: .acquiring) { throw RpcError(.unavailable, "earshotd is stopping; resume from version \(at)") }
    }

    /// The items of an added change still in `owner`'s library, as messages, read a bounded
    /// piece at a time (a change may add up to 1000 items); an item removed meanwhile is left
    /// out, as its removal follows in the log. Nil when the call ended or the daemon stops first.
    private func addedItems(_ ids: [String], owner: String) async throws(RpcError) -> [Earshot_V1_LibraryItem]? {
        var items: [Earshot_V1_LibraryItem] = []
        var next = 0
        while next < ids.count {
            let piece = ids[next..<min(ids.count, next + Self.catchUpItems)]
            let read = try await pacedRead(owner: owner, booking: Self.catchUpItems * Self.bookingPerItem) { db throws(LibraryError) in
                let (found, looked) = try db.items(owner: owner, ids: piece, maximumBytes: Self.catchUpBytes)
                let cost = found.reduce(looked * Self.costPerItem) { $0 + $1.entry.body.count }
                return ((found.map(Self.message), looked), cost)
            }
            guard let (found, looked) = read else { return nil }
            items += found
            next += looked
        }
        return items
    }

    // MARK: Backup

    private func backup(by caller: String) async throws(RpcError) -> Earshot_V1_LibraryBackupResponse {
        let folder = backupFolder
        do { try Directory.create(folder, mode: 0o700) } catch {
            throw RpcError(.unavailable, "cannot make \(folder): \(error.message)")
        }
        let stamp = Self.fileStamp()
        let path = Path.join(folder, "library-\(stamp).db")
        let owners: [LibraryOwner]
        do throws(LibraryError) { owners = try await store.backup(to: path) } catch { throw rpcError(error) }
        // Read back a megabyte at a time, each given back once hashed: a large library does not
        // stay resident in the daemon.
        var hash = SHA256()
        let size: Int
        do {
            let file = try MappedFile(path: path)
            size = file.bytes.count
            for start in stride(from: 0, to: size, by: 1 << 20) {
                let chunk = start..<min(size, start + (1 << 20))
                file.willRead(chunk)
                hash.update(UnsafeRawBufferPointer(rebasing: file.bytes[chunk]))
                file.doneReading(chunk)
            }
        } catch {
            throw RpcError(.internal, "the backup \(path) was written but cannot be read back: \(error.message)")
        }
        var reply = Earshot_V1_LibraryBackupResponse()
        reply.path = path
        reply.bytes = UInt64(size)
        reply.sha256 = SHA256.hex(hash.finish())
        reply.owners = UInt32(owners.count)
        reply.items = UInt64(owners.reduce(0) { $0 + $1.itemCount })
        logger.notice("library: \(caller) wrote a backup to \(path) (\(size) bytes, \(reply.items) items)")
        let names = ((try? Directory.names(in: folder)) ?? []).filter { $0.hasPrefix("library-") && $0.hasSuffix(".db") }.sorted()
        for old in names.dropLast(Self.backupsKept) { try? Directory.remove(Path.join(folder, old)) }
        return reply
    }

    // MARK: Helpers

    /// After a commit, on the write queue (so in commit order): the notice on library/ and the
    /// owner's watchers woken.
    private func announce(_ commit: LibraryCommit) {
        var notice = Earshot_V1_LibraryNotice()
        notice.ownerHash = store.ownerHash(commit.owner.name)
        notice.version = commit.change.version
        notice.itemCount = UInt32(clamping: commit.owner.itemCount)
        notice.kind = Self.kind(commit.change.kind)
        notice.changed = UInt32(clamping: commit.changedCount)
        events.publishLibrary(notice)
        for w in watchers.withLock({ Array(($0[commit.owner.name] ?? [:]).values) }) { w.yield(()) }
    }

    static func kind(_ kind: LibraryChange.Kind) -> Earshot_V1_LibraryChange.Kind {
        switch kind {
        case .added: .added
        case .removed: .removed
        case .cleared: .cleared
        }
    }

    private func reply(_ commit: LibraryCommit) -> Earshot_V1_LibraryWriteResponse {
        var reply = Earshot_V1_LibraryWriteResponse()
        reply.version = commit.change.version
        reply.items = commit.items.map(Self.message)
        reply.itemCount = UInt32(clamping: commit.owner.itemCount)
        reply.ownerHash = store.ownerHash(commit.owner.name)
        return reply
    }

    /// A write, announced once committed.
    private func change(_ body: @escaping @Sendable (LibraryDatabase) throws(LibraryError) -> LibraryCommit) async throws(RpcError) -> LibraryCommit {
        do throws(LibraryError) {
            return try await store.write(body) { [self] commit in announce(commit) }
        } catch {
            throw rpcError(error)
        }
    }

    /// Writes are refused while the disk is nearly full: the database, and the rest of the
    /// daemon, keep room to finish what they do.
    private func checkSpace() throws(RpcError) {
        let folder = Path.folder(of: store.path)
        guard reserveBytes > 0, let free = Directory.availableBytes(at: folder), free < reserveBytes else { return }
        throw RpcError(.resourceExhausted, "the library's disk has \(free >> 20) MB free, below library.reserve_bytes (\(reserveBytes >> 20) MB): free some space; nothing was changed")
    }

    /// Runs `body` on a reading connection in `lane`'s turn (the calling key), mapping its
    /// errors to status codes.
    private func read<T: Sendable>(lane: String, _ body: @escaping @Sendable (LibraryDatabase) throws(LibraryError) -> T) async throws(RpcError) -> T {
        do throws(LibraryError) { return try await store.read(lane: lane, body) } catch { throw rpcError(error) }
    }

    /// A catch-up read of `owner`'s, in its turn and within its pace: it books `booking` bytes,
    /// waits until the owner's earlier reads are paid for, and settles with the cost `body`
    /// reports. Nil, with the booking given back, when the call ends or the daemon stops first.
    private func pacedRead<T: Sendable>(owner: String, booking: Int,
                                        _ body: @escaping @Sendable (LibraryDatabase) throws(LibraryError) -> (T, cost: Int)) async throws(RpcError) -> T? {
        let wait = pacing.withLock { $0.book(booking, for: owner, now: .now) }
        let until = ContinuousClock.now + wait
        while ContinuousClock.now < until, !Task.isCancelled, !stopping.load(ordering: .acquiring) {
            try? await Task.sleep(for: min(ContinuousClock.now.duration(to: until), .milliseconds(100)))
        }
        if Task.isCancelled || stopping.load(ordering: .acquiring) {
            pacing.withLock { $0.settle(booked: booking, actual: 0, for: owner) }
            return nil
        }
        let (value, cost) = try await read(lane: owner, body)
        pacing.withLock { $0.settle(booked: booking, actual: cost, for: owner) }
        return value
    }

    private func rpcError(_ error: LibraryError) -> RpcError {
        let code: RpcStatusCode = switch error.kind {
        case .invalidArgument: .invalidArgument
        case .notFound: .notFound
        case .resourceExhausted: .resourceExhausted
        case .dataLoss: .dataLoss
        case .unavailable: .unavailable
        case .internal: .internal
        }
        if code == .dataLoss || code == .internal { logger.error("library: \(error.message)") }
        return RpcError(code, error.message)
    }

    static func nowMs() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded()) }

    /// Now in UTC as "20261129T061054.123Z": backups sort by name in the order they were made.
    static func fileStamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var t = tm()
        gmtime_r(&seconds, &t)
        func digits(_ value: Int, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return digits(Int(t.tm_year) + 1900, 4) + digits(Int(t.tm_mon) + 1, 2) + digits(Int(t.tm_mday), 2) + "T"
            + digits(Int(t.tm_hour), 2) + digits(Int(t.tm_min), 2) + digits(Int(t.tm_sec), 2) + "." + digits(now.tv_nsec / 1_000_000, 3) + "Z"
    }
}
