import EarshotCore
import EarshotSync
import EarshotSystem
import EarshotTransport
import FoundationEssentials
import Logging

#if canImport(Glibc)
    import Glibc
#endif

/// The daemon's CURVE side: its key pair (made on first start), the allow-list file and its
/// reloading, the start-up self-test, and the rate-limited log of refused clients.
final class DaemonSecurity: Sendable {
    let security: ServerSecurity
    let allowListPath: String
    private let logger: Logger
    /// (mtime s, mtime ns, size, inode) of the file last read: a change of any means re-read.
    private let fileStamp = Locked<FileIdentity?>(nil)
    /// Refusals already logged (unknown keys, failed handshakes), and when the log last spoke.
    private let logged = Locked<(keys: Int, handshakes: Int, at: ContinuousClock.Instant?)>((0, 0, nil))
    /// The log mentions refused clients at most this often (a scanner must not flood it).
    static let logInterval: Duration = .seconds(60)

    init(configuration: DaemonConfiguration, logger: Logger) throws(EarshotError) {
        self.logger = logger
        let state = configuration.stateDirectory
        let keyPath = Path.join(state, "server.key")
        let publicPath = Path.join(state, "server.public")
        let keyPair: CurveKeyPair
        do throws(CurveKeyFile.Problem) {
            if FileManager.default.fileExists(atPath: keyPath) {
                keyPair = try CurveKeyFile.readKeyPair(keyPath)
            } else {
                do { keyPair = try CurveKeyPair.generate() } catch { throw CurveKeyFile.Problem(message: "cannot make the server key: \(error)") }
                try CurveKeyFile.writeSecret(keyPair, to: keyPath, comment: "earshotd server secret key: keep private")
                logger.notice("made a new server key pair in \(keyPath)")
            }
            // Rewritten at every start, so it always matches the secret key.
            try CurveKeyFile.writePublic(keyPair.publicKey, to: publicPath, comment: "earshotd server public key: give it to clients (--server-key)")
        } catch {
            throw .internalError(error.message)
        }
        allowListPath = configuration.allowListPath
        let entries = try AllowListFile.load(allowListPath)
        security = ServerSecurity(keyPair: keyPair, allowList: ClientAllowList(entries))
        fileStamp.withLock { $0 = FileIdentity(path: allowListPath) }
        logger.notice("CURVE on; server public key \(keyPair.publicKey) (also in \(publicPath)); \(entries.count) client(s) allowed by \(allowListPath)")
    }

    /// Re-reads the allow-list. A broken file is logged and the previous list kept, so a typo
    /// does not lock everyone out.
    func reload(reason: String) {
        fileStamp.withLock { $0 = FileIdentity(path: allowListPath) }
        do throws(EarshotError) {
            let entries = try AllowListFile.load(allowListPath)
            let before = Set(security.allowList.entries.map(\.publicKey))
            security.allowList.replace(with: entries)
            let removed = before.subtracting(entries.map(\.publicKey)).count
            logger.notice("allow-list re-read (\(reason)): \(entries.count) client(s)\(removed > 0 ? ", \(removed) removed (cut off; event subscribers reconnect)" : "")")
        } catch {
            logger.error("allow-list not re-read (\(reason)), keeping the previous one: \(error.message)")
        }
    }

    /// Once a second: re-read the allow-list if the file changed, and log new refusals.
    func watch() -> Task<Void, Never> {
        Task.detached { [self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                if FileIdentity(path: allowListPath) != fileStamp.withLock({ $0 }) { reload(reason: "file changed") }
                logRejections()
            }
        }
    }

    private func logRejections() {
        let r = security.allowList.rejections
        let now = ContinuousClock.now
        let (keys, handshakes, at) = logged.withLock { $0 }
        guard r.count > keys || r.failedHandshakes > handshakes, at.map({ now - $0 >= Self.logInterval }) ?? true else { return }
        logged.withLock { $0 = (r.count, r.failedHandshakes, now) }
        if r.count > keys {
            logger.warning("refused \(r.count - keys) connection(s) with keys not in the allow-list; last from \(r.lastAddress ?? "?") with key \(r.lastKey ?? "?")")
        }
        if r.failedHandshakes > handshakes {
            logger.warning("\(r.failedHandshakes - handshakes) handshake(s) failed before a key was known; last: \(r.lastFailure ?? "?")")
        }
    }

    /// Proves that a stranger is refused: connects with a fresh unknown key and waits for the
    /// ZAP handler to refuse it. A libzmq that admitted keys without asking (the 4.3.4 default
    /// without ZMQ_ZAP_ENFORCE_DOMAIN) would never ask, and the daemon does not start.
    func selfTest(endpoint: String) throws(EarshotError) {
        let target = Self.loopback(endpoint)
        let before = security.allowList.rejections.count
        let client: RpcClient
        do throws(TransportError) {
            var configuration = RpcClient.Configuration()
            configuration.security = ClientSecurity(serverPublicKey: security.keyPair.publicKey, keyPair: try .generate())
            client = try RpcClient(endpoint: target, configuration: configuration)
        } catch {
            throw .internalError("security self-test could not run against \(target): \(error)")
        }
        defer { client.close() }
        let giveUp = ContinuousClock.now + .seconds(5)
        while security.allowList.rejections.count == before {
            guard ContinuousClock.now < giveUp else {
                throw .internalError("security self-test failed: a client with an unknown key connecting to \(target) was not refused within 5 s; refusing to start")
            }
            usleep(10_000)
        }
        logged.withLock { $0.keys = security.allowList.rejections.count }
        logger.info("security self-test: an unknown key was refused on \(target)")
    }

    /// `endpoint` with a wildcard host replaced by 127.0.0.1, so the self-test can reach it.
    static func loopback(_ endpoint: String) -> String {
        endpoint.replacing("tcp://0.0.0.0:", with: "tcp://127.0.0.1:").replacing("tcp://*:", with: "tcp://127.0.0.1:")
    }
}
