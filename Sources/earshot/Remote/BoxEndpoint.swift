import EarshotSystem
import EarshotTransport
import Foundation

/// A box of a fleet: its RPC endpoint and the CURVE keys to reach it (nil: plain TCP), and for a
/// box found by name, that name and its announced events endpoint.
struct BoxEndpoint: Sendable {
    let endpoint: String
    let security: ClientSecurity?
    var name: String? = nil
    var announcedEvents: String? = nil

    /// Whether `text` is an endpoint (tcp://, ipc://), not a box's name.
    static func isEndpoint(_ text: some StringProtocol) -> Bool { text.hasPrefix("tcp://") || text.hasPrefix("ipc://") }

    /// Whether `text` can be a box's name on the LAN (NAME or NAME.local): not an address.
    static func isName(_ text: some StringProtocol) -> Bool {
        !text.isEmpty && !text.contains("://") && !text.contains(":") && !text.contains("/")
    }

    /// The boxes of `--server` (repeated) and `--servers-file` (one endpoint per line, optionally
    /// followed by its server public key; or a line that is a box's name on the LAN; `#` starts a
    /// comment), each with the client key and its server key (its line's, else `serverKey` or
    /// EARSHOT_SERVER_KEY, else for a name the key it announces). Names are looked for in one
    /// browse of the LAN. None given: the local box. `keyKind` says in errors which client key
    /// the command needs.
    static func fleet(servers: [String], serversFile: String?, serverKey: String?, clientKey: String?,
                      keyKind: String) throws(CLIFailure) -> [BoxEndpoint] {
        let environment = ProcessInfo.processInfo.environment
        let sharedServerKey = serverKey ?? environment["EARSHOT_SERVER_KEY"].flatMap { $0.isEmpty ? nil : $0 }
        let clientKeyPath = clientKey ?? environment["EARSHOT_CLIENT_KEY"].flatMap { $0.isEmpty ? nil : $0 }
        var entries: [(endpoint: String, serverKey: String?)] = servers.map { ($0, nil) }
        var names: [String: BoxDiscovery.Box] = [:]
        if let serversFile {
            // Read without ever blocking (a FIFO named here is refused, not waited on).
            let text: String
            do { text = String(decoding: try AtomicFile.read(serversFile), as: UTF8.self) } catch {
                throw CLIFailure("cannot read the servers file: \(error.message)", status: .usage)
            }
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
                guard let first = fields.first, !first.hasPrefix("#") else { continue }
                // A box's name may hold spaces: the whole line is the name.
                let name = line.trimmingCharacters(in: .whitespacesAndNewlines)
                if !isEndpoint(first), isName(name) {
                    entries.append((name, nil))
                    continue
                }
                guard isEndpoint(first), fields.count <= 2 else {
                    throw CLIFailure("\(serversFile):\(number + 1): expected an endpoint (tcp://host:port), then optionally its server key; or a box's name", status: .usage)
                }
                entries.append((String(first), fields.count == 2 ? String(fields[1]) : nil))
            }
        }
        if entries.contains(where: { !isEndpoint($0.endpoint) }) {
            let (boxes, _) = try BoxDiscovery.find(timeout: RemoteOptions.discoveryTimeout)
            for e in entries where !isEndpoint(e.endpoint) {
                names[e.endpoint] = try BoxDiscovery.box(named: e.endpoint, in: boxes, timeout: RemoteOptions.discoveryTimeout)
            }
        }
        if entries.isEmpty { entries = [("tcp://127.0.0.1:7400", nil)] }
        let keyPair: CurveKeyPair?
        do throws(CurveKeyFile.Problem) { keyPair = try clientKeyPath.map(CurveKeyFile.readKeyPair) } catch {
            throw CLIFailure(error.message, status: .usage)
        }
        var out: [BoxEndpoint] = []
        for var e in entries {
            let found = names[e.endpoint]
            if let found {
                e.endpoint = found.server
                e.serverKey = sharedServerKey ?? found.announcement.serverPublicKey
            }
            guard let keyPair else {
                if e.serverKey ?? sharedServerKey != nil {
                    throw CLIFailure("a server key needs --key too: \(keyKind) made by `earshot keygen`", status: .usage)
                }
                out.append(BoxEndpoint(endpoint: e.endpoint, security: nil, name: found?.announcement.name, announcedEvents: found?.events))
                continue
            }
            guard let key = e.serverKey ?? sharedServerKey else {
                throw CLIFailure("\(e.endpoint): no server key (give --server-key, or one on its line of --servers-file)", status: .usage)
            }
            do throws(CurveKeyFile.Problem) {
                out.append(BoxEndpoint(endpoint: e.endpoint,
                                       security: ClientSecurity(serverPublicKey: try CurveKeyFile.key(fromTextOrFile: key), keyPair: keyPair),
                                       name: found?.announcement.name, announcedEvents: found?.events))
            } catch { throw CLIFailure(error.message, status: .usage) }
        }
        return out
    }

    /// How output names the box: the name it was found by, with its endpoint; else its endpoint.
    var label: String { name.map { "\($0) (\(endpoint))" } ?? endpoint }

    /// The box's events endpoint: the announced one, else its RPC port + 1.
    var eventsEndpoint: String? {
        if let announcedEvents { return announcedEvents }
        guard let colon = endpoint.lastIndex(of: ":"), let port = Int(endpoint[endpoint.index(after: colon)...]) else { return nil }
        return endpoint[..<colon] + ":\(port + 1)"
    }
}
