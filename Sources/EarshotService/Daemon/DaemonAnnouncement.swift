import Avahi
import Dispatch
import EarshotCrypto
import EarshotSync
import EarshotWire
import Glibc
import Logging

/// The box announced on the LAN with DNS-SD (`ServiceAnnouncement`) through avahi-daemon while
/// the daemon serves: published after the sockets are bound, withdrawn first on stop. Without
/// avahi-daemon the daemon serves as before and the log says the box is not announced.
final class DaemonAnnouncement: Sendable {
    private let publisher: AvahiPublisher

    private init(publisher: AvahiPublisher) { self.publisher = publisher }

    /// Starts announcing, or returns nil (and logs why) when `daemon.announce` is off, RPC
    /// listens on loopback only, or Avahi's client cannot be made.
    static func start(_ c: DaemonConfiguration, rpc: [String], events: [String], serverPublicKey: String?,
                      logger: Logger) -> DaemonAnnouncement? {
        guard c.announce else {
            logger.info("not announced on the LAN (daemon.announce = false)")
            return nil
        }
        guard let rpcPort = rpc.lazy.compactMap(lanPort).first else {
            logger.info("not announced on the LAN: rpc.listen (\(rpc.joined(separator: " "))) reaches loopback only")
            return nil
        }
        guard let eventsPort = events.lazy.compactMap(lanPort).first else {
            logger.info("not announced on the LAN: events.listen (\(events.joined(separator: " "))) reaches loopback only")
            return nil
        }
        let announcement = ServiceAnnouncement(name: boxName(c), rpcPort: rpcPort, eventsPort: eventsPort,
                                               serverPublicKey: serverPublicKey)
        let service = DNSSDService(name: announcement.name, type: ServiceAnnouncement.serviceType, port: rpcPort,
                                   txt: announcement.txt)
        let key = serverPublicKey.flatMap(CurveKeyFingerprint.of).map { ", server key fingerprint \($0)" } ?? ", without CURVE"
        // avahi-daemon's absence is said once per absence, not at every reconnection attempt.
        let missing = Locked(false)
        do {
            let publisher = try AvahiPublisher(service: service) { event in
                switch event {
                case .published(let name):
                    missing.withLock { $0 = false }
                    logger.info("announced on the LAN as \"\(name)\" (\(ServiceAnnouncement.serviceType), port \(rpcPort)\(key)) through avahi-daemon")
                case .renamed(let from, let to):
                    logger.notice("another device on the LAN is called \"\(from)\": announced as \"\(to)\" instead (set daemon.name to choose)")
                case .daemonUnavailable:
                    if missing.withLock({ let first = !$0; $0 = true; return first }) {
                        logger.warning("avahi-daemon is not running: the box is not announced on the LAN (clients need its address); announced once it runs")
                    }
                case .failed(let message):
                    logger.warning("not announced on the LAN: Avahi refused the announcement: \(message)")
                }
            }
            return DaemonAnnouncement(publisher: publisher)
        } catch {
            logger.warning("not announced on the LAN: \(error.message)")
            return nil
        }
    }

    /// How long a stop waits for avahi-daemon to withdraw the record.
    static let withdrawalLimit = 1.0

    /// Withdraws the announcement, waiting at most `withdrawalLimit` seconds: a hung avahi-daemon
    /// answers D-Bus only after its 25 s timeout, and must not hold up the daemon's stop (the
    /// record then goes when the process's D-Bus connection closes).
    func stop(logger: Logger) {
        let publisher = self.publisher, done = DispatchSemaphore(value: 0)
        do {
            _ = try NamedThread(name: "earshot-mdns-bye") {
                publisher.stop()
                done.signal()
            }
        } catch {
            publisher.stop()
            return
        }
        if done.wait(timeout: .now() + Self.withdrawalLimit) == .timedOut {
            logger.warning("avahi-daemon did not withdraw the announcement within \(Self.withdrawalLimit) s; stopping without waiting")
        }
    }

    /// `daemon.name`, or the host name when it is "".
    static func boxName(_ c: DaemonConfiguration) -> String {
        if !c.name.isEmpty { return c.name }
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "earshot" }
        let host = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // DNS-SD allows 63 bytes; a longer host name is cut at a character boundary.
        var name = ""
        for ch in host where name.utf8.count + ch.utf8.count <= DNSSDService.maximumNameBytes { name.append(ch) }
        return name.isEmpty ? "earshot" : name
    }

    /// The port of a bound TCP endpoint that other machines can reach: not loopback.
    static func lanPort(_ endpoint: String) -> UInt16? {
        guard endpoint.hasPrefix("tcp://"), let colon = endpoint.lastIndex(of: ":") else { return nil }
        let host = endpoint[endpoint.index(endpoint.startIndex, offsetBy: 6)..<colon]
        let loopback = host.hasPrefix("127.") || host == "localhost" || host == "[::1]" || host == "::1"
        guard !loopback, let port = UInt16(endpoint[endpoint.index(after: colon)...]), port > 0 else { return nil }
        return port
    }
}
