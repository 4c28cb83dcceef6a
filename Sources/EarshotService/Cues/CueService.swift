import EarshotCore
import EarshotLive
import EarshotSync
import EarshotSystem
import EarshotTransport
import EarshotWire
import FoundationEssentials
import Logging
import Synchronization

/// `earshot.v1.Cues` and the cue/ topic: runs the `CueMonitor` on the session's continuous
/// results and fires its events on time.
///
/// The monitor's clock is seconds of `ContinuousClock` since the service began. A result's
/// stream time (the end of its window) is put on that clock through the moment the session read
/// its newest audio: live sources deliver in real time, so stream and clock run together. A
/// timer task sleeps until the monitor's next deadline; every result re-arms it.
///
/// The service follows the programme only while there is something to fire: an enabled catalog
/// with cues, or cues the controller set. A box without cues pays nothing.
final class CueService: Sendable {
    private let session: ManagedSession
    private let registry: CatalogRegistry
    private let events: DaemonEvents
    private let logger: Logger
    private let store: CueStore
    private let enabled: Bool
    private let origin = ContinuousClock.now
    private let state: Locked<State>
    private let nextWatcherID = Atomic<Int>(0)
    /// The revision of the ONCE memory on disk.
    private let onceWritten = Locked(0)
    /// The controller's cues as `cue-overrides.json` holds them, each encoded once, by
    /// `overrideKey`. Held while that file is written, so writers take turns and the state lock
    /// (events, RPC) never waits for an fsync; `State.overrides` changes only under it.
    private let overridesFile: Locked<[String: [UInt8]]>

    private struct State: Sendable {
        var monitor: CueMonitor
        var overrides: [CueStore.Override]
        var following: Task<Void, Never>?
        var timer: Task<Void, Never>?
        var timerDeadline: Double?
        /// The ONCE memory's revision last handed to `saveOnce`.
        var savedOnceRevision = 0
        var watchers: [Int: AsyncStream<Earshot_V1_CueEvent>.Continuation] = [:]
        /// The schedule built from each override (by `overrideKey`) for the catalog version it
        /// was built for (nil: it does not check), so observations do not build it again.
        var built: [String: (version: Int, schedule: CueSchedule?)] = [:]
    }

    private static func overrideKey(_ catalog: String, _ reference: Int) -> String { "\(catalog)\u{0}\(reference)" }

    init(session: ManagedSession, registry: CatalogRegistry, events: DaemonEvents, configuration c: DaemonConfiguration,
         logger: Logger) {
        self.session = session
        self.registry = registry
        self.events = events
        self.logger = logger
        enabled = c.cuesEnabled
        store = CueStore(stateDirectory: c.stateDirectory)
        var overrides: [CueStore.Override] = []
        do { overrides = try store.loadOverrides() } catch {
            logger.error("cue overrides: \(error.message); \(store.setAside(store.overridesPath)); the catalogs' own cues serve")
        }
        var encoded: [String: [UInt8]] = [:]
        overrides = overrides.filter { o in
            do throws(EarshotError) { try CueLimits.check(o.cues) } catch {
                logger.error("cues set for \(o.catalog) v\(o.version) reference \(o.reference) dropped: \(error.message)")
                return false
            }
            do throws(SystemError) { encoded[Self.overrideKey(o.catalog, o.reference)] = try CueStore.encode(o) } catch {
                logger.error("cues set for \(o.catalog) reference \(o.reference) dropped: \(error.message)")
                return false
            }
            return true
        }
        overridesFile = Locked(encoded)
        var once = CueOnceMemory()
        do { once = try store.loadOnce() } catch {
            logger.error("ONCE cues: \(error.message); \(store.setAside(store.oncePath)); ONCE cues may fire again")
        }
        let gap = Double(c.cueSessionGapSeconds)
        once.expire(at: Date().timeIntervalSince1970, gap: gap)
        let configuration = CueMonitor.Configuration(
            lead: Double(c.cueLeadMilliseconds) / 1000, lostHorizon: Double(c.cueLostHorizonMilliseconds) / 1000,
            holdAfter: Double(c.cueHoldMilliseconds) / 1000, sessionGap: gap, minimumConfidence: c.cueMinimumConfidence)
        state = Locked(State(monitor: CueMonitor(configuration: configuration, once: once), overrides: overrides))
        pruneOverrides()
    }

    // MARK: Following

    /// Starts or stops following as cues come and go (call after any catalog or override change).
    func refresh() {
        let needed = enabled && (registry.catalogSet.members.contains { $0.catalog.hasCues } || state.withLock { !$0.overrides.isEmpty })
        state.withLock { s in
            if needed, s.following == nil {
                let results = session.results(), statuses = session.statusUpdates()
                s.following = Task { [self] in
                    // The session's restarts of the audio, beside its results: a programme file
                    // that loops or is replaced stops the cues predicted past that moment.
                    let restarts = Task { [self] in
                        var seen = session.status.restarts
                        for await status in statuses where status.restarts != seen {
                            seen = status.restarts
                            if let at = status.lastRestart { audioStartedOver(atStreamTime: at) }
                        }
                    }
                    for await r in results { observe(r) }
                    restarts.cancel()
                }
                logger.info("cues: following the programme")
            } else if !needed, let task = s.following {
                task.cancel()
                s.following = nil
                s.timer?.cancel()
                s.timer = nil
                s.timerDeadline = nil
                logger.info("cues: no catalog holds cues; not following for them")
            }
        }
    }

    /// Catalogs were installed, replaced, enabled or removed: cues may have changed.
    func catalogsChanged() {
        pruneOverrides()
        refresh()
        let now = clockNow()
        state.withLock { s in
            s.built.removeAll()
            guard let programme = s.monitor.programme else { return }
            let (schedule, _) = schedule(for: programme, in: &s)
            let out = s.monitor.scheduleChanged(schedule, for: programme, at: now)
            publish(out, in: &s, now: now)
            rearm(&s)
        }
        saveOnce()
    }

    func stop() {
        state.withLock { s in
            s.following?.cancel()
            s.timer?.cancel()
            for w in s.watchers.values { w.finish() }
            s.watchers.removeAll()
        }
    }

    private func observe(_ r: StreamingResult) {
        guard case .match(let items) = r.result, let top = items.first else { return }  // misses: time tells
        let programme = CueProgramme(catalogName: top.catalogName, referenceIndex: top.referenceIndex,
                                     catalogVersion: top.catalogVersion)
        let time = clockTime(ofStreamTime: r.streamTime)
        let observation = CueMonitor.Observation(
            programme: programme, position: top.predictedCurrentMatchOffset, rate: 1 + top.timeSkew, confidence: top.confidence,
            time: time, wallTime: Date().timeIntervalSince1970, revealsJump: r.revealsJump, isStale: r.isStale)
        let now = clockNow()
        state.withLock { s in
            let (schedule, _) = schedule(for: programme, in: &s)
            let out = s.monitor.observe(observation, schedule: schedule) + s.monitor.advance(to: now)
            publish(out, in: &s, now: now)
            rearm(&s)
        }
        saveOnce()
    }

    private func audioStartedOver(atStreamTime streamTime: Double) {
        let time = clockTime(ofStreamTime: streamTime), now = clockNow()
        state.withLock { s in
            publish(s.monitor.audioStartedOver(at: time), in: &s, now: now)
            rearm(&s)
        }
        saveOnce()
    }

    private func tick() {
        let now = clockNow()
        state.withLock { s in
            s.timer = nil
            s.timerDeadline = nil
            publish(s.monitor.advance(to: now), in: &s, now: now)
            rearm(&s)
        }
        saveOnce()
    }

    /// A timer for the monitor's next deadline (kept when it is already set for it).
    private func rearm(_ s: inout State) {
        let deadline = s.monitor.nextDeadline
        guard deadline != s.timerDeadline || s.timer == nil else { return }
        s.timer?.cancel()
        s.timerDeadline = deadline
        guard let deadline, s.following != nil else {
            s.timer = nil
            return
        }
        let instant = origin + .seconds(max(0, deadline))
        s.timer = Task { [self] in
            try? await Task.sleep(until: instant, tolerance: .milliseconds(1), clock: .continuous)
            guard !Task.isCancelled else { return }
            tick()
        }
    }

    /// Writes the ONCE memory when it changed, outside the state lock (an fsync on a slow card must
    /// not hold up the next cue), one writer at a time and never an older memory over a newer one.
    private func saveOnce() {
        guard let (once, revision) = state.withLock({ s -> (CueOnceMemory, Int)? in
            guard s.monitor.onceRevision != s.savedOnceRevision else { return nil }
            s.savedOnceRevision = s.monitor.onceRevision
            return (s.monitor.once, s.monitor.onceRevision)
        }) else { return }
        onceWritten.withLock { written in
            guard revision > written else { return }
            written = revision
            do throws(SystemError) { try store.save(once) } catch { logger.error("cannot save ONCE cues: \(error.message)") }
        }
    }

    // MARK: Clock

    private func clockNow() -> Double { (ContinuousClock.now - origin) / .seconds(1) }

    /// The service clock at the moment audio of stream time `streamTime` was read.
    private func clockTime(ofStreamTime streamTime: Double) -> Double {
        guard let newest = session.status.newestAudio else { return clockNow() }
        return (newest.instant - origin) / .seconds(1) + (streamTime - newest.streamTime)
    }

    private func unixMilliseconds(atClock t: Double) -> Int64 {
        Int64(((Date().timeIntervalSince1970 + t - clockNow()) * 1000).rounded())
    }

    // MARK: Schedules

    /// The cues of `programme`: the controller's for that catalog version, else the catalog's.
    /// The controller's are built once per override and catalog version (`State.built`).
    private func schedule(for programme: CueProgramme, in s: inout State) -> (CueSchedule, Earshot_V1_CueSchedule.Source) {
        guard let catalog = registry.slot(named: programme.catalogName)?.loaded?.catalog,
              programme.referenceIndex >= 0, programme.referenceIndex < catalog.referenceCount
        else { return (.empty(referenceDuration: 0), .catalog) }
        if let o = s.overrides.first(where: { $0.catalog == programme.catalogName && $0.reference == programme.referenceIndex }),
           o.version == programme.catalogVersion {
            let key = Self.overrideKey(o.catalog, o.reference)
            let schedule: CueSchedule?
            if let cached = s.built[key], cached.version == o.version {
                schedule = cached.schedule
            } else {
                let duration = catalog.references[programme.referenceIndex].duration
                schedule = try? CueSchedule(o.cues, referenceDuration: duration)
                s.built[key] = (o.version, schedule)
            }
            if let schedule { return (schedule, .controller) }
        }
        return (catalog.cues(ofReference: programme.referenceIndex), .catalog)
    }

    /// Writes `overrides` from the encoded pieces (encoding any missing); the caller holds
    /// `overridesFile`.
    private func save(_ overrides: [CueStore.Override], pieces: inout [String: [UInt8]]) throws(SystemError) {
        var list: [[UInt8]] = []
        list.reserveCapacity(overrides.count)
        for o in overrides {
            let key = Self.overrideKey(o.catalog, o.reference)
            if pieces[key] == nil { pieces[key] = try CueStore.encode(o) }
            list.append(pieces[key]!)
        }
        try store.save(encoded: list)
    }

    /// Drops the controller's cues for catalogs that were replaced by a new version.
    private func pruneOverrides() {
        let versions = Dictionary(registry.all.map { ($0.name, $0.version) }, uniquingKeysWith: { a, _ in a })
        overridesFile.withLock { pieces in
            let overrides = state.withLock { $0.overrides }
            let kept = overrides.filter { o in versions[o.catalog].map { $0 == o.version } ?? true }
            guard kept.count != overrides.count else { return }
            for o in overrides where !kept.contains(o) {
                logger.notice("cues set for \(o.catalog) v\(o.version) reference \(o.reference) dropped: the catalog is now v\(versions[o.catalog] ?? 0)")
                pieces[Self.overrideKey(o.catalog, o.reference)] = nil
            }
            do throws(SystemError) { try save(kept, pieces: &pieces) } catch { logger.error("cannot save cue overrides: \(error.message)") }
            // Built schedules are dropped by the callers: at start there are none, and a catalog
            // change rebuilds them all.
            state.withLock { $0.overrides = kept }
        }
    }

    private struct Reference {
        var programme: CueProgramme
        var catalog: MappedCatalog
    }

    /// The reference a request names: by media item id, by catalog and index, or the programme
    /// being followed.
    private func resolve(_ r: Earshot_V1_CueScheduleRequest) throws(RpcError) -> Reference {
        if !r.catalog.isEmpty { _ = try CatalogsService.checked(r.catalog) }
        try NameRule.check(r.mediaItemID, as: "media_item_id")
        let slots = registry.all.filter { $0.loaded != nil && (r.catalog.isEmpty || $0.name == r.catalog) }
        if !r.catalog.isEmpty, slots.isEmpty {
            throw RpcError(.notFound, "no catalog named \"\(r.catalog)\" is loaded")
        }
        if !r.mediaItemID.isEmpty {
            for slot in slots {
                guard let catalog = slot.loaded?.catalog else { continue }
                for i in 0..<catalog.referenceCount where catalog.mediaItems(ofReference: i).contains(where: { $0.id == r.mediaItemID }) {
                    return Reference(programme: CueProgramme(catalogName: slot.name, referenceIndex: i, catalogVersion: slot.version),
                                     catalog: catalog)
                }
            }
            throw RpcError(.notFound, "no media item \"\(r.mediaItemID)\" in \(r.catalog.isEmpty ? "any loaded catalog" : r.catalog)")
        }
        if r.catalog.isEmpty {
            guard let programme = state.withLock({ $0.monitor.programme }),
                  let slot = registry.slot(named: programme.catalogName), let catalog = slot.loaded?.catalog
            else { throw RpcError(.notFound, "no programme is being followed; name a catalog and reference (or a media item id)") }
            return Reference(programme: CueProgramme(catalogName: slot.name, referenceIndex: programme.referenceIndex,
                                                     catalogVersion: slot.version), catalog: catalog)
        }
        let slot = slots[0]
        guard let catalog = slot.loaded?.catalog else { throw RpcError(.failedPrecondition, "catalog \(slot.name) is not loaded") }
        let index = Int(r.referenceIndex)
        guard index < catalog.referenceCount else {
            throw RpcError(.notFound, "catalog \(slot.name) has no reference \(index) (it has \(catalog.referenceCount))")
        }
        return Reference(programme: CueProgramme(catalogName: slot.name, referenceIndex: index, catalogVersion: slot.version),
                         catalog: catalog)
    }

    // MARK: Wire

    private func wireProgramme(_ p: CueProgramme) -> Earshot_V1_CueProgramme {
        let title = registry.slot(named: p.catalogName)?.loaded.flatMap { loaded -> String? in
            guard p.referenceIndex < loaded.catalog.referenceCount else { return nil }
            return loaded.catalog.mediaItems(ofReference: p.referenceIndex).first.map { $0.title ?? $0.id }
        }
        return Earshot_V1_CueProgramme(p, title: title ?? "")
    }

    private func wireSchedule(_ p: CueProgramme, in s: inout State) -> Earshot_V1_CueSchedule {
        let (schedule, source) = self.schedule(for: p, in: &s)
        return Earshot_V1_CueSchedule(schedule, programme: wireProgramme(p), source: source)
    }

    /// Sends `out` to the cue/ topic and every StreamCues call, under the state lock so they
    /// leave in the monitor's order.
    private func publish(_ out: [CueEvent], in s: inout State, now: Double) {
        guard !out.isEmpty else { return }
        let rate = s.monitor.rate
        for e in out {
            var w = Earshot_V1_CueEvent()
            w.kind = Earshot_V1_CueEvent.Kind(e.kind)
            w.programme = wireProgramme(e.programme)
            if let cue = e.cue {
                let index = s.monitor.schedule.cues.firstIndex { $0.id == cue.id }
                w.cue = Earshot_V1_Cue(cue, end: index.flatMap { s.monitor.schedule.end(ofCueAt: $0) })
                if e.kind == .upcoming {
                    w.dueUnixMs = unixMilliseconds(atClock: e.time + (cue.start - e.position) / rate)
                }
            }
            if e.kind == .schedule { w.schedule = wireSchedule(e.programme, in: &s) }
            if e.count > 1 { w.coalesced = UInt32(clamping: e.count) }
            w.position = e.position
            w.latenessSeconds = e.lateness
            w.owed = e.owed
            w.reason = e.reason
            if let from = e.from { w.fromPosition = from }
            w.rate = rate
            events.publishCue(w)
            for watcher in s.watchers.values { watcher.yield(w) }
            logLine(e)
        }
    }

    private func logLine(_ e: CueEvent) {
        let at = e.position.decimalText(places: 2)
        let together = e.count > 1 ? " (\(e.count) cues crossed together, this one the last)" : ""
        switch e.kind {
        case .started, .skipped:
            let late = e.lateness > 0.05 ? ", \(e.lateness.decimalText(places: 2)) s late" : ""
            let why = e.reason.isEmpty ? "" : " (\(e.reason))"
            logger.info("cue \(e.kind.rawValue): \(e.cue?.id ?? "") at \(at) s of \(e.programme.key)\(late)\(why)\(e.owed ? " (owed)" : "")\(together)")
        case .seek:
            logger.info("cue timeline: \(e.programme.key) jumped from \((e.from ?? 0).decimalText(places: 2)) to \(at) s")
        case .programmeLost:
            logger.info("cue timeline: \(e.programme.key) lost at \(at) s")
        case .schedule, .upcoming, .ended:
            logger.debug("cue \(e.kind.rawValue): \(e.cue?.id ?? e.programme.key) at \(at) s\(together)")
        }
    }

    /// The monitor's state for GetCurrent, StreamCues and the session snapshot.
    func currentState() -> Earshot_V1_CueState {
        let now = clockNow()
        return state.withLock { s in currentState(s, now: now) }
    }

    private func currentState(_ s: State, now: Double) -> Earshot_V1_CueState {
        let snapshot = s.monitor.snapshot(at: now)
        var w = Earshot_V1_CueState()
        w.phase = Earshot_V1_CueState.Phase(snapshot.phase)
        w.takenAtUnixMs = unixMilliseconds(atClock: now)
        guard let programme = snapshot.programme else { return w }
        w.programme = wireProgramme(programme)
        w.position = snapshot.position
        w.rate = snapshot.rate
        let schedule = s.monitor.schedule
        // The schedule is not carried (GetSchedule gives it): current and next stay small.
        var index: [String: Int] = [:]
        if !snapshot.current.isEmpty || snapshot.next != nil {
            index = Dictionary(schedule.cues.indices.map { (schedule.cues[$0].id, $0) }, uniquingKeysWith: { a, _ in a })
        }
        func wire(_ cue: Cue) -> Earshot_V1_Cue {
            Earshot_V1_Cue(cue, end: index[cue.id].flatMap { schedule.end(ofCueAt: $0) })
        }
        w.current = snapshot.current.map(wire)
        if let next = snapshot.next { w.next = wire(next) }
        if let t = snapshot.nextTime { w.nextDueUnixMs = unixMilliseconds(atClock: t) }
        return w
    }

    // MARK: RPC

    func register(on server: RpcServer) {
        server.register(Methods.Cues.getSchedule, role: .viewer) { [self] request, _ throws(RpcError) in
            let reference = try resolve(request)
            let (schedule, source) = state.withLock { s in self.schedule(for: reference.programme, in: &s) }
            return Earshot_V1_CueSchedule(schedule, programme: wireProgramme(reference.programme), source: source)
        }
        server.register(Methods.Cues.getCurrent, role: .viewer) { [self] _, _ throws(RpcError) in currentState() }
        server.register(Methods.Cues.setCues, role: .operator) { [self] request, _ throws(RpcError) in
            let reference = try resolve(request.reference)
            // The count first: nothing is built from a set past the limit.
            do throws(EarshotError) { try CueLimits.checkCount(request.cues.count) } catch {
                throw RpcError(.invalidArgument, error.message)
            }
            var cues: [Cue] = []
            cues.reserveCapacity(request.cues.count)
            for w in request.cues {
                do throws(EarshotError) { cues.append(try Cue(wire: w)) } catch { throw RpcError(.invalidArgument, error.message) }
            }
            let duration = reference.catalog.references[reference.programme.referenceIndex].duration
            let built: CueSchedule
            do throws(EarshotError) { built = try CueSchedule(cues, referenceDuration: duration) } catch {
                throw RpcError(.invalidArgument, error.message)
            }
            let p = reference.programme
            let change = CueStore.Override(catalog: p.catalogName, version: p.catalogVersion, reference: p.referenceIndex, cues: cues)
            let reply = try replaceOverride(for: p, with: change, built: built)
            logger.notice("cues: \(cues.count) cue(s) set for \(p.catalogName) v\(p.catalogVersion) reference \(p.referenceIndex)")
            return reply
        }
        server.register(Methods.Cues.clearCues, role: .operator) { [self] request, _ throws(RpcError) in
            let p = try resolve(request).programme
            let reply = try replaceOverride(for: p, with: nil, built: nil)
            // A cleared set (up to the limits' few MB) goes back to the system, not just to malloc.
            HeapMemory.giveBack()
            logger.notice("cues: \(p.catalogName) reference \(p.referenceIndex) back to the catalog's cues")
            return reply
        }
        server.register(streaming: Methods.Cues.streamCues, role: .viewer) { [self] _, call, writer throws(RpcError) in
            let (stream, continuation) = AsyncStream.makeStream(of: Earshot_V1_CueEvent.self, bufferingPolicy: .bufferingNewest(256))
            let id = nextWatcherID.add(1, ordering: .relaxed).newValue
            // The state first, then every event after it (published under the same lock).
            let now = clockNow()
            state.withLock { s in
                var first = Earshot_V1_CueEvent()
                first.kind = .state
                first.state = currentState(s, now: now)
                continuation.yield(first)
                s.watchers[id] = continuation
            }
            defer { _ = state.withLock { $0.watchers.removeValue(forKey: id) } }
            for await event in stream { try writer.send(event) }
            if let reason = call.cancellationReason() { throw reason }
        }
    }

    /// Sets (or with nil, clears) the controller's cues of `p` (`built`: their schedule); saved
    /// before anything changes. The file is encoded and written outside the state lock, so cues
    /// keep firing and other calls keep being answered meanwhile; only the override that changed
    /// is encoded.
    private func replaceOverride(for p: CueProgramme, with change: CueStore.Override?, built: CueSchedule?) throws(RpcError)
        -> Earshot_V1_CueSchedule
    {
        let key = Self.overrideKey(p.catalogName, p.referenceIndex)
        try overridesFile.withLock { (file: inout [String: [UInt8]]) throws(RpcError) in
            var overrides = state.withLock { $0.overrides }.filter { !($0.catalog == p.catalogName && $0.reference == p.referenceIndex) }
            var pieces = file
            pieces[key] = nil
            if let change {
                overrides.append(change)
                do throws(EarshotError) {
                    try CueLimits.checkCatalog(overrides.lazy.filter { $0.catalog == p.catalogName }.map(\.cues.count))
                } catch { throw RpcError(.invalidArgument, "the controller's cues of catalog \(p.catalogName): \(error.message)") }
            }
            do throws(SystemError) { try save(overrides, pieces: &pieces) } catch {
                throw RpcError(.unavailable, "cannot save the cues: \(error.message); nothing changed")
            }
            file = pieces
            let now = clockNow()
            state.withLock { s in
                s.overrides = overrides
                s.built[key] = change.map { ($0.version, built) }
                if let programme = s.monitor.programme, programme.isSame(as: p) {
                    let (schedule, _) = self.schedule(for: programme, in: &s)
                    publish(s.monitor.scheduleChanged(schedule, for: programme, at: now), in: &s, now: now)
                    rearm(&s)
                }
            }
        }
        saveOnce()
        refresh()
        let (schedule, source) = state.withLock { s in self.schedule(for: p, in: &s) }
        return Earshot_V1_CueSchedule(schedule, programme: wireProgramme(p), source: source)
    }
}
