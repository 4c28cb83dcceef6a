import EarshotAudio
import EarshotCore
import EarshotCrypto
import EarshotLive
import EarshotStore
import EarshotSync
import EarshotSystem
import EarshotTransport
import EarshotWire
import FoundationEssentials
import Logging

/// `earshotd` put together: catalogs, the managed session on the configured source, the RPC
/// services and the event publisher. The executable only parses its arguments and calls this.
public final class Daemon: Sendable {
    public let configuration: DaemonConfiguration
    private let logger: Logger
    private let loop: TransportLoop
    private let server: RpcServer
    private let publisher: EventPublisher
    private let session: ManagedSession
    private let registry: CatalogRegistry
    private let catalogs: CatalogsService
    private let health: HealthService
    private let sessionService: SessionService
    private let tasks = Locked<[Task<Void, Never>]>([])
    private let stopped = OnceFlag()
    /// Finished by `stop()` once everything is closed; `run()` waits for it.
    private let finished = AsyncStream<Void>.makeStream()

    /// Opens catalogs and binds the sockets; `run()` starts serving. Once `stopRequested`
    /// returns true (SIGTERM during start-up) it gives up as soon as it can, with
    /// `DaemonSignals.stoppedDuringStartUp`.
    public init(configuration: DaemonConfiguration, logger: Logger,
                stopRequested: @escaping @Sendable () -> Bool = { false }) throws(EarshotError) {
        self.configuration = configuration
        self.logger = logger
        // A daemon or CLI killed in the middle of an atomic write leaves its temporary file.
        let state = configuration.stateDirectory
        let catalogFolder = Path.join(state, "catalogs")
        for folder in [state, catalogFolder] {
            for name in AtomicFile.removeStaleTemporaries(in: folder) {
                logger.notice("removed \(name) in \(folder), left by an interrupted write")
            }
        }
        let trust: CatalogCheck.Trust
        if configuration.trustedAuthors.isEmpty {
            trust = .anyone
        } else {
            do throws(AuthorKeyFile.Problem) {
                let authors = try AuthorKeyFile.readTrustedAuthors(configuration.trustedAuthors)
                trust = .authors(authors)
                logger.info("catalogs must be signed by one of \(authors.count) trusted author(s) in \(configuration.trustedAuthors)")
            } catch {
                throw .internalError("catalogs.trusted_authors: \(error.message)")
            }
        }
        registry = try CatalogRegistry(directory: catalogFolder, indexPath: Path.join(state, "catalogs.json"),
                                       trust: trust, required: configuration.catalog, logger: logger, shouldStop: stopRequested)
        let uploadArea: UploadArea
        do {
            uploadArea = try UploadArea(
                directory: Path.join(state, "uploads"),
                limits: .init(maximumBytes: configuration.maximumUploadBytes, maximumUploads: configuration.maximumUploads,
                              maximumTotalBytes: configuration.maximumUploadTotalBytes,
                              expirySeconds: Double(configuration.uploadExpirySeconds), reserveBytes: configuration.reserveBytes),
                now: Date().timeIntervalSince1970)
        } catch {
            throw .internalError("cannot open the upload folder: \(error.message)")
        }
        if stopRequested() { throw DaemonSignals.stoppedDuringStartUp }
        let startSet = registry.catalogSet

        let c = configuration
        let source: ManagedSession.SourceFactory
        let sourceName: String
        switch c.source {
        case .alsa:
            sourceName = c.device
            let alsa = AlsaCaptureConfiguration(device: c.device, sampleRate: c.sampleRate, channelCount: c.channels,
                                                periodDuration: Double(c.periodMilliseconds) / 1000)
            source = {
                AlsaAudioSource(configuration: alsa, bufferDuration: c.bufferSeconds,
                                realtimePriority: c.realtimePriority > 0 ? Int32(c.realtimePriority) : nil)
            }
        case .file:
            sourceName = "file:" + c.file
            source = {
                // Opened by the session, and reopened after a failure like a device: a file that is
                // missing, gone or not audio is a capture problem until it is back.
                PacedFileAudioSource(openingAtStart: c.file, loop: c.loop)
            }
        }
        session = ManagedSession(catalogs: startSet, staysPrepared: true,
                                 attemptInterval: Double(c.attemptIntervalMilliseconds) / 1000, source: source)

        let epoch = UInt64.random(in: 1...UInt64.max)
        let daemonSecurity: DaemonSecurity?
        switch c.securityMode {
        case .curve:
            do throws(EarshotError) { daemonSecurity = try DaemonSecurity(configuration: c, logger: logger) } catch {
                session.shutdown()
                throw error
            }
        case .none:
            daemonSecurity = nil
            logger.warning("security.mode = \"none\": no CURVE, no allow-list; anyone who can reach \((c.rpcListen + c.eventsListen).joined(separator: " ")) may do anything")
        }
        self.security = daemonSecurity
        // The library is opened before the descriptor budget is made: its connections' files
        // (database, WAL, shared memory each) are then counted as in use.
        var libraryStore: LibraryStore?
        if c.libraryEnabled {
            var limits = LibraryLimits()
            limits.maximumItems = c.libraryMaximumItemsPerOwner
            limits.maximumBytes = c.libraryMaximumBytesPerOwner
            limits.changeLogLength = c.libraryChangeLogLength
            libraryStore = LibraryStore(path: c.libraryDatabasePath, limits: limits,
                                        maximumDatabaseBytes: c.libraryMaximumDatabaseMegabytes > 0 ? c.libraryMaximumDatabaseMegabytes << 20 : nil,
                                        readConnections: c.libraryReadConnections, logger: logger)
        }
        // Connections may never take the descriptors the daemon needs for itself.
        // Files the daemon opens after this point count as in use already: the catalog folder's
        // inotify watch, libdispatch's queue (an eventfd and an epoll), one part file per upload
        // in progress, and a library backup's two connections (source database, WAL and shared
        // memory; the copy and its journal).
        let descriptors = DescriptorBudget.make(configured: c.maximumConnections,
                                                openedLater: 3 + c.maximumUploads + (libraryStore == nil ? 0 : 5))
        let limiter = ConnectionLimiter(limits: .init(maximumConnections: descriptors.connections,
                                                      maximumPerAddress: c.maximumConnectionsPerAddress))
        let raised = descriptors.limit > descriptors.limitBefore ? " (raised from \(descriptors.limitBefore))" : ""
        logger.info("clients: up to \(limiter.limits.maximumConnections) connections at once, \(limiter.limits.maximumPerAddress) from one address (file descriptors: limit \(descriptors.limit)\(raised), \(descriptors.inUse) in use, \(descriptors.reserve + DescriptorBudget.burstAllowance) kept for the daemon's own files and for connections still closing)")
        if descriptors.connections < c.maximumConnections {
            logger.notice("rpc.max_connections = \(c.maximumConnections) does not fit the descriptor limit of \(descriptors.limit); allowing \(descriptors.connections) (raise LimitNOFILE)")
        }
        do {
            loop = try TransportLoop()
            var rpc = RpcServer.Configuration(endpoints: c.rpcListen)
            rpc.maximumMessageBytes = c.maximumMessageBytes
            rpc.maximumInFlightPerPeer = c.maximumInFlightPerPeer
            rpc.maximumInFlightPerClient = c.maximumInFlightPerClient
            rpc.maximumInFlight = c.maximumInFlight
            rpc.operatorReserve = c.maximumInFlight / 4
            rpc.connectionLimiter = limiter
            rpc.defaultTimeout = .milliseconds(c.defaultTimeoutMilliseconds)
            rpc.security = daemonSecurity?.security
            server = try RpcServer(loop: loop, configuration: rpc)
            publisher = try EventPublisher(loop: loop, endpoints: c.eventsListen, epoch: epoch,
                                           heartbeatInterval: .milliseconds(c.heartbeatMilliseconds),
                                           sendHighWaterMark: Int32(clamping: c.sendHighWaterMark),
                                           security: daemonSecurity?.security, topics: Topics.all,
                                           connectionLimiter: limiter)
        } catch {
            session.shutdown()
            throw .internalError("cannot open the network sockets: \(error)")
        }
        if let daemonSecurity {
            do throws(EarshotError) { try daemonSecurity.selfTest(endpoint: server.boundEndpoints[0]) } catch {
                session.shutdown()
                loop.stop()
                throw error
            }
        }
        let events = DaemonEvents(publisher: publisher, epoch: epoch)
        let counters = DaemonCounters()
        let cues = CueService(session: session, registry: registry, events: events, configuration: c, logger: logger)
        self.cues = cues
        sessionService = SessionService(session: session, events: events, sourceName: sourceName) { cues.currentState() }
        let catalogs = CatalogsService(registry: registry, uploads: uploadArea, trust: trust, events: events, logger: logger)
        self.catalogs = catalogs
        let (server, publisher, session) = (self.server, self.publisher, self.session)
        let statistics = DaemonStatistics(counters: counters, session: session, server: server, publisher: publisher,
                                          limiter: limiter, allowList: daemonSecurity?.security.allowList)
        health = HealthService(events: events) { statistics.snapshot() }
        let feed = MatchFeed(events: events, counters: counters, logger: logger)
        var library: LibraryService?
        if let store = libraryStore {
            health.setLibraryProblem(store.healthProblem)
            let allowList = daemonSecurity?.security.allowList
            library = LibraryService(store: store, events: events, configuration: c, logger: logger) {
                allowList.map { Set($0.entries.map(\.name)) }
            }
        } else {
            health.setLibraryProblem("the library is turned off (library.enabled = false)")
        }
        self.library = library
        let recognizer = RecognizerService(session: session, catalogs: startSet, feed: feed, library: library)
        recognizer.register(on: server)
        sessionService.register(on: server)
        catalogs.register(on: server)
        cues.register(on: server)
        library?.register(on: server)
        health.register(on: server)

        for s in registry.all {
            if let l = s.loaded {
                logger.info("catalog \(s.name) v\(s.version)\(s.enabled ? "" : " (disabled)"): \(l.catalog.referenceCount) references, \(Self.duration(l.catalog.totalDuration))")
            }
        }
        if startSet.isEmpty {
            logger.notice("no catalog is enabled in \(registry.directory): push one (earshot remote catalog push) or copy a .earcat there; matches answer an error until then")
        }
        logger.info("listening on \(sourceName); RPC \(server.boundEndpoints.joined(separator: " ")); events \(publisher.boundEndpoints.joined(separator: " "))")
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
        watcher = configuration.watchCatalogFolder ? CatalogFolderWatcher(registry: registry, logger: logger) : nil
        self.events = events
        self.feed = feed
        refusals = RefusalLog(logger: logger, limiter: limiter, server: server)
    }

    private let events: DaemonEvents
    private let cues: CueService
    private let library: LibraryService?
    private let feed: MatchFeed
    private let watcher: CatalogFolderWatcher?
    private let security: DaemonSecurity?
    private let refusals: RefusalLog

    /// Re-reads the allow-list now (SIGHUP); it is also re-read within a second of a change.
    public func reloadAllowList() {
        security?.reload(reason: "SIGHUP")
    }

    /// "2.4 h", "12 min" or "81 s": a catalog's length at a glance.
    static func duration(_ seconds: Double) -> String {
        if seconds >= 3600 { return "\((seconds / 3600).decimalText(places: 1)) h" }
        if seconds >= 120 { return "\((seconds / 60).decimalText(places: 0)) min" }
        return "\(seconds.decimalText(places: 0)) s"
    }

    /// The endpoints actually bound (port 0 becomes the real port).
    public var rpcEndpoints: [String] { server.boundEndpoints }
    public var eventEndpoints: [String] { publisher.boundEndpoints }

    /// Serves until `stop()`.
    public func run() async {
        loop.start()
        let session = self.session, events = self.events, logger = self.logger, sessionService = self.sessionService
        let health = self.health
        // Session state → events, health and the log. The session reports a capture problem once
        // per reason and clears it only when new audio arrives, so each line here is a change.
        let source = sessionService.sourceName
        let statusTask = Task {
            var problem: String?
            var problemSince = ContinuousClock.now
            var reopens = 0
            for await status in session.statusUpdates() {
                events.publishSession(sessionService.snapshot())
                // Opened again while it played, without a failure: the file was replaced.
                let reopened = status.sourceStatistics.reopenAttempts
                if reopened > reopens, problem == nil, status.captureProblem == nil {
                    logger.notice("audio source \(source) changed while it played (the file was replaced or rewritten): listening to it from its start")
                }
                reopens = reopened
                if status.captureProblem != problem {
                    if let p = status.captureProblem {
                        if problem == nil { problemSince = .now }
                        logger.warning("audio capture: \(p)")
                    } else if problem != nil {
                        let seconds = ((ContinuousClock.now - problemSince) / .milliseconds(100)).rounded() / 10
                        logger.notice("audio capture works again after \(seconds) s without audio")
                    }
                    problem = status.captureProblem
                    health.setCaptureProblem(problem)
                }
            }
        }
        var started = [statusTask]
        if configuration.prepareOnStart { session.prepare() }
        if configuration.follow {
            // Continuous recognition: every new match and lost match goes to the match topic.
            let feed = self.feed
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
        if configuration.loadTestRate > 0 { started.append(loadTest(rate: configuration.loadTestRate)) }
        tasks.withLock { $0 = started }
        health.set(.serving)
        for await _ in finished.stream {}
    }

    /// Benchmarking only (`events.load_test_rate`): synthetic events at `rate` per second, in
    /// bursts every 10 ms, each carrying its publish time, to measure what the event path
    /// sustains while the daemon serves.
    private func loadTest(rate: Int) -> Task<Void, Never> {
        let publisher = self.publisher
        logger.warning("publishing \(rate) synthetic events per second on \(Topics.loadTest) (events.load_test_rate)")
        return Task.detached {
            let start = ContinuousClock.now
            var sent = 0
            while !Task.isCancelled {
                let elapsed = ContinuousClock.now - start
                let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
                let due = Int(seconds * Double(rate))
                while sent < due {
                    publisher.publish(topic: Topics.loadTest) { e in
                        var hb = Earshot_V1_Heartbeat()
                        hb.globalSeq = UInt64(sent)
                        e.heartbeat = hb
                    }
                    sent += 1
                }
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
    }

    /// Graceful stop: health NOT_SERVING, new calls refused, in-flight calls get up to `grace`,
    /// then capture and sockets close.
    public func stop(grace: Duration = .seconds(2)) async {
        guard stopped.claim() else { return }
        logger.notice("stopping")
        health.set(.notServing)
        server.stopAccepting()
        library?.stop()  // open WatchLibrary streams end now, not at the end of the grace
        await server.shutdown(grace: grace)
        for t in tasks.withLock({ $0 }) { t.cancel() }
        cues.stop()
        watcher?.stop()
        session.shutdown()
        loop.stop()
        finished.continuation.finish()
    }
}
