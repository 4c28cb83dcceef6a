import EarshotCore
import EarshotCrypto
import EarshotStore
import EarshotSystem
import EarshotTransport
import EarshotWire
import FoundationEssentials
import Logging

/// The steps that put a daemon together, each on its own, in the order `Daemon.init` takes them.
enum DaemonStartUp {
    /// A daemon or CLI killed in the middle of an atomic write leaves its temporary file.
    static func removeInterruptedWrites(_ c: DaemonConfiguration, logger: Logger) {
        for folder in [c.stateDirectory, c.catalogFolder] {
            for name in AtomicFile.removeStaleTemporaries(in: folder) {
                logger.notice("removed \(name) in \(folder), left by an interrupted write")
            }
        }
    }

    /// Whose catalogs the daemon accepts: anyone's, or those signed by a trusted author.
    static func catalogTrust(_ c: DaemonConfiguration, logger: Logger) throws(EarshotError) -> CatalogCheck.Trust {
        if c.trustedAuthors.isEmpty { return .anyone }
        do throws(AuthorKeyFile.Problem) {
            let authors = try AuthorKeyFile.readTrustedAuthors(c.trustedAuthors)
            logger.info("catalogs must be signed by one of \(authors.count) trusted author(s) in \(c.trustedAuthors)")
            return .authors(authors)
        } catch {
            throw .internalError("catalogs.trusted_authors: \(error.message)")
        }
    }

    static func openUploadArea(_ c: DaemonConfiguration) throws(EarshotError) -> UploadArea {
        do {
            return try UploadArea(
                directory: Path.join(c.stateDirectory, "uploads"),
                limits: .init(maximumBytes: c.maximumUploadBytes, maximumUploads: c.maximumUploads,
                              maximumTotalBytes: c.maximumUploadTotalBytes,
                              expirySeconds: Double(c.uploadExpirySeconds), reserveBytes: c.reserveBytes),
                now: Date().timeIntervalSince1970)
        } catch {
            throw .internalError("cannot open the upload folder: \(error.message)")
        }
    }

    /// CURVE keys and the allow-list, or nil (with a warning) when security is off.
    static func openSecurity(_ c: DaemonConfiguration, logger: Logger) throws(EarshotError) -> DaemonSecurity? {
        switch c.securityMode {
        case .curve:
            return try DaemonSecurity(configuration: c, logger: logger)
        case .none:
            logger.warning("security.mode = \"none\": no CURVE, no allow-list; anyone who can reach \((c.rpcListen + c.eventsListen).joined(separator: " ")) may do anything")
            return nil
        }
    }

    /// The library database, or nil when the library is turned off.
    static func openLibrary(_ c: DaemonConfiguration, logger: Logger) -> LibraryStore? {
        guard c.libraryEnabled else { return nil }
        var limits = LibraryLimits()
        limits.maximumItems = c.libraryMaximumItemsPerOwner
        limits.maximumBytes = c.libraryMaximumBytesPerOwner
        limits.changeLogLength = c.libraryChangeLogLength
        return LibraryStore(path: c.libraryDatabasePath, limits: limits,
                            maximumDatabaseBytes: c.libraryMaximumDatabaseMegabytes > 0 ? c.libraryMaximumDatabaseMegabytes << 20 : nil,
                            readConnections: c.libraryReadConnections, logger: logger)
    }

    /// How many connections clients may hold, so that they never take the descriptors the daemon
    /// needs for itself. Made after the library is open, whose files then count as in use; the
    /// files opened later are reserved: the catalog folder's inotify watch, libdispatch's queue
    /// (an eventfd and an epoll), one part file per upload in progress, and a library backup's
    /// two connections (source database, WAL and shared memory; the copy and its journal).
    static func connectionLimiter(_ c: DaemonConfiguration, libraryOpen: Bool, logger: Logger) -> ConnectionLimiter {
        let descriptors = DescriptorBudget.make(configured: c.maximumConnections,
                                                openedLater: 3 + c.maximumUploads + (libraryOpen ? 5 : 0))
        let limiter = ConnectionLimiter(limits: .init(maximumConnections: descriptors.connections,
                                                      maximumPerAddress: c.maximumConnectionsPerAddress))
        let raised = descriptors.limit > descriptors.limitBefore ? " (raised from \(descriptors.limitBefore))" : ""
        logger.info("clients: up to \(limiter.limits.maximumConnections) connections at once, \(limiter.limits.maximumPerAddress) from one address (file descriptors: limit \(descriptors.limit)\(raised), \(descriptors.inUse) in use, \(descriptors.reserve + DescriptorBudget.burstAllowance) kept for the daemon's own files and for connections still closing)")
        if descriptors.connections < c.maximumConnections {
            logger.notice("rpc.max_connections = \(c.maximumConnections) does not fit the descriptor limit of \(descriptors.limit); allowing \(descriptors.connections) (raise LimitNOFILE)")
        }
        return limiter
    }

    static func rpcConfiguration(_ c: DaemonConfiguration, security: DaemonSecurity?,
                                 limiter: ConnectionLimiter) -> RpcServer.Configuration {
        var rpc = RpcServer.Configuration(endpoints: c.rpcListen)
        rpc.maximumMessageBytes = c.maximumMessageBytes
        rpc.maximumInFlightPerPeer = c.maximumInFlightPerPeer
        rpc.maximumInFlightPerClient = c.maximumInFlightPerClient
        rpc.maximumInFlight = c.maximumInFlight
        rpc.operatorReserve = c.maximumInFlight / 4
        rpc.connectionLimiter = limiter
        rpc.defaultTimeout = .milliseconds(c.defaultTimeoutMilliseconds)
        rpc.security = security?.security
        return rpc
    }

    static func openPublisher(_ c: DaemonConfiguration, loop: TransportLoop, epoch: UInt64, security: DaemonSecurity?,
                              limiter: ConnectionLimiter) throws(TransportError) -> EventPublisher {
        try EventPublisher(loop: loop, endpoints: c.eventsListen, epoch: epoch,
                           heartbeatInterval: .milliseconds(c.heartbeatMilliseconds),
                           sendHighWaterMark: Int32(clamping: c.sendHighWaterMark),
                           security: security?.security, topics: Topics.all, connectionLimiter: limiter)
    }
}
