import EarshotCore
import EarshotLive
import EarshotStore
import EarshotSync
import EarshotTransport
import FoundationEssentials
import Logging

/// `earshotd` put together: catalogs, the managed session on the configured source, the RPC
/// services and the event publisher. The executable only parses its arguments and calls this.
public final class Daemon: Sendable {
    public let configuration: DaemonConfiguration
    private let logger: Logger
    private let registry: CatalogRegistry
    private let session: ManagedSession
    private let security: DaemonSecurity?
    private let loop: TransportLoop
    private let server: RpcServer
    private let publisher: EventPublisher
    private let events: DaemonEvents
    private let feed: MatchFeed
    private let sessionService: SessionService
    private let catalogs: CatalogsService
    private let cues: CueService
    private let library: LibraryService?
    private let health: HealthService
    private let watcher: CatalogFolderWatcher?
    private let refusals: RefusalLog
    private let tasks = Locked<[Task<Void, Never>]>([])
    private let stopped = OnceFlag()
    /// The DNS-SD announcement while serving (`DaemonAnnouncement`), if any, and whether `stop()`
    /// has withdrawn it (an announcement made after that is withdrawn at once).
    private let announcement = Locked<(current: DaemonAnnouncement?, withdrawn: Bool)>((nil, false))
    /// Finished by `stop()` once everything is closed; `run()` waits for it.
    private let finished = AsyncStream<Void>.makeStream()

    /// Opens catalogs and binds the sockets; `run()` starts serving. Once `stopRequested`
    /// returns true (SIGTERM during start-up) it gives up as soon as it can, with
    /// `DaemonSignals.stoppedDuringStartUp`.
    public init(configuration c: DaemonConfiguration, logger: Logger,
                stopRequested: @escaping @Sendable () -> Bool = { false }) throws(EarshotError) {
        configuration = c
        self.logger = logger
        DaemonStartUp.removeInterruptedWrites(c, logger: logger)
        let trust = try DaemonStartUp.catalogTrust(c, logger: logger)
        registry = try CatalogRegistry(directory: c.catalogFolder, indexPath: c.catalogIndexPath, trust: trust,
                                       required: c.catalog, logger: logger, shouldStop: stopRequested)
        let uploads = try DaemonStartUp.openUploadArea(c)
        if stopRequested() { throw DaemonSignals.stoppedDuringStartUp }

        let source = DaemonAudioSource(c)
        // The enabled catalogs at start, read once: nothing changes them until `follow` attaches.
        let startSet = registry.catalogSet
        let session = ManagedSession(catalogs: startSet, staysPrepared: true,
                                     attemptInterval: Double(c.attemptIntervalMilliseconds) / 1000, source: source.open)
        self.session = session
        // From here on a step that fails undoes what the earlier ones started, in this one place.
        var openedLoop: TransportLoop?
        let epoch = UInt64.random(in: 1...UInt64.max)
        do throws(EarshotError) {
            security = try DaemonStartUp.openSecurity(c, logger: logger)
            let libraryStore = DaemonStartUp.openLibrary(c, logger: logger)
            let limiter = DaemonStartUp.connectionLimiter(c, libraryOpen: libraryStore != nil, logger: logger)
            do throws(TransportError) {
                loop = try TransportLoop()
                openedLoop = loop
                server = try RpcServer(loop: loop, configuration: DaemonStartUp.rpcConfiguration(c, security: security, limiter: limiter))
                publisher = try DaemonStartUp.openPublisher(c, loop: loop, epoch: epoch,
                                                            security: security, limiter: limiter)
            } catch {
                throw .internalError("cannot open the network sockets: \(error)")
            }
            try security?.selfTest(endpoint: server.boundEndpoints[0])

            events = DaemonEvents(publisher: publisher, epoch: epoch)
            let counters = DaemonCounters()
            feed = MatchFeed(events: events, counters: counters, logger: logger)
            cues = CueService(session: session, registry: registry, events: events, configuration: c, logger: logger)
            sessionService = SessionService(session: session, events: events, sourceName: source.name) { [cues] in cues.currentState() }
            catalogs = CatalogsService(registry: registry, uploads: uploads, trust: trust, events: events, logger: logger)
            let statistics = DaemonStatistics(counters: counters, session: session, server: server, publisher: publisher,
                                              limiter: limiter, allowList: security?.security.allowList)
            health = HealthService(events: events) { statistics.snapshot() }
            library = Self.libraryService(libraryStore, security: security, health: health, events: events, configuration: c, logger: logger)
            refusals = RefusalLog(logger: logger, limiter: limiter, server: server)
        } catch {
            session.shutdown()
            openedLoop?.stop()
            throw error
        }

        let recognizer = RecognizerService(session: session, catalogs: startSet, feed: feed, library: library)
        recognizer.register(on: server)
        sessionService.register(on: server)
        catalogs.register(on: server)
        cues.register(on: server)
        library?.register(on: server)
        health.register(on: server)
        StartUpReport.log(registry: registry, enabled: startSet, source: source.name,
                          rpc: server.boundEndpoints, events: publisher.boundEndpoints, logger: logger)
        Self.follow(registry, session: session, recognizer: recognizer, cues: cues, events: events, catalogs: catalogs)
        watcher = c.watchCatalogFolder ? CatalogFolderWatcher(registry: registry, logger: logger) : nil
    }

    /// The Library service on `store`, or nil when the library is turned off (health says so).
    private static func libraryService(_ store: LibraryStore?, security: DaemonSecurity?, health: HealthService,
                                       events: DaemonEvents, configuration: DaemonConfiguration, logger: Logger) -> LibraryService? {
        guard let store else {
            health.setLibraryProblem("the library is turned off (library.enabled = false)")
            return nil
        }
        health.setLibraryProblem(store.healthProblem)
        let allowList = security?.security.allowList
        return LibraryService(store: store, events: events, configuration: configuration, logger: logger) {
            allowList.map { Set($0.entries.map(\.name)) }
        }
    }

    /// Publishes each catalog's state, then keeps the session, the recognizer and the cues on the
    /// registry's enabled set as catalogs come and go.
    private static func follow(_ registry: CatalogRegistry, session: ManagedSession, recognizer: RecognizerService,
                               cues: CueService, events: DaemonEvents, catalogs: CatalogsService) {
        for s in registry.all {
            events.publishCatalog(s.loaded == nil ? .failed : .loaded, catalogs.summary(s), message: s.failure ?? "")
        }
        registry.attach(.init(
            catalogsChanged: { set in
                session.setCatalogs(set)
                recognizer.setCatalogs(set)
                cues.catalogsChanged()
            },
            publish: { kind, slot, message in
                events.publishCatalog(kind, slot.map(catalogs.summary), message: message)
            }))
    }

    /// Re-reads the allow-list now (SIGHUP); it is also re-read within a second of a change.
    public func reloadAllowList() {
        security?.reload(reason: "SIGHUP")
    }

    /// The endpoints actually bound (port 0 becomes the real port).
    public var rpcEndpoints: [String] { server.boundEndpoints }
    public var eventEndpoints: [String] { publisher.boundEndpoints }

    /// Serves until `stop()`.
    public func run() async {
        loop.start()
        var started = [CaptureStatusLog.watch(session: session, sessionService: sessionService, events: events,
                                              health: health, logger: logger)]
        if configuration.prepareOnStart { session.prepare() }
        if configuration.follow {
            // Continuous recognition: every new match and lost match goes to the match topic.
            let (session, feed) = (session, feed)
            started.append(Task {
                for await r in session.results() {
                    feed.record(r.result, from: .follow, streamTime: r.streamTime, isRepeat: r.isRepeat)
                }
            })
        }
        // Cues follow the programme on their own results sequence while any catalog holds cues.
        cues.refresh()
        if let security { started.append(security.watch()) }
        started.append(refusals.watch())
        let catalogs = self.catalogs
        started.append(Task {
            while !Task.isCancelled {
                catalogs.expireUploads()
                try? await Task.sleep(for: .seconds(60))
            }
        })
        if configuration.loadTestRate > 0 {
            started.append(SyntheticEventLoad.start(rate: configuration.loadTestRate, on: publisher, logger: logger))
        }
        tasks.withLock { $0 = started }
        health.set(.serving)
        let announced = DaemonAnnouncement.start(configuration, rpc: server.boundEndpoints, events: publisher.boundEndpoints,
                                                 serverPublicKey: security?.security.keyPair.publicKey, logger: logger)
        let kept = announcement.withLock { state in
            if !state.withdrawn { state.current = announced }
            return !state.withdrawn
        }
        if !kept { announced?.stop(logger: logger) }
        for await _ in finished.stream {}
    }

    /// Graceful stop: health NOT_SERVING, new calls refused, in-flight calls get up to `grace`,
    /// then capture and sockets close.
    public func stop(grace: Duration = .seconds(2)) async {
        guard stopped.claim() else { return }
        logger.notice("stopping")
        // Clients on the LAN stop finding the box before it stops answering.
        announcement.withLock { state in
            state.withdrawn = true
            defer { state.current = nil }
            return state.current
        }?.stop(logger: logger)
        health.set(.notServing)
        server.stopAccepting()
        library?.stop()  // open WatchLibrary streams end now, not at the end of the grace
        await server.shutdown(grace: grace)
        for t in tasks.withLock({ $0 }) { t.cancel() }
        cues.stop()
        watcher?.stop()
        session.shutdown()
        loop.stop()
        // The registry's hooks and the server's handlers hold services that hold them back.
        registry.detach()
        server.removeHandlers()
        finished.continuation.finish()
    }
}
