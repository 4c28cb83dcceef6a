import EarshotSystem
import EarshotTransport
import Foundation

/// A box of a fleet: its RPC endpoint and the CURVE keys to reach it (nil: plain TCP).
struct BoxEndpoint: Sendable {
    let endpoint: String
    let security: ClientSecurity?

    /// The boxes of `--server` (repeated) and `--servers-file` (one endpoint per line, optionally
    /// followed by its server public key; `#` starts a comment), each with the client key and its
    /// server key (its line's, else `serverKey` or EARSHOT_SERVER_KEY). None given: the local box.
    /// `keyKind` says in errors which client key the command needs.
    static func fleet(servers: [String], serversFile: String?, serverKey: String?, clientKey: String?,
                      keyKind: String) throws(CLIFailure) -> [BoxEndpoint] {
        let environment = ProcessInfo.processInfo.environment
        let sharedServerKey = serverKey ?? environment["EARSHOT_SERVER_KEY"].flatMap { $0.isEmpty ? nil : $0 }
        let clientKeyPath = clientKey ?? environment["EARSHOT_CLIENT_KEY"].flatMap { $0.isEmpty ? nil : $0 }
        var entries: [(endpoint: String, serverKey: String?)] = servers.map { ($0, nil) }
        if let serversFile {
            // Read without ever blocking (a FIFO named here is refused, not waited on).
            let text: String
            do { text = String(decoding: try AtomicFile.read(serversFile), as: UTF8.self) } catch {
                throw CLIFailure("cannot read the servers file: \(error.message)", status: .usage)
            }
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
                guard let first = fields.first, !first.hasPrefix("#") else { continue }
                guard first.hasPrefix("tcp://") || first.hasPrefix("ipc://"), fields.count <= 2 else {
                    throw CLIFailure("\(serversFile):\(number + 1): expected an endpoint (tcp://host:port), then optionally its server key", status: .usage)
                }
                entries.append((String(first), fields.count == 2 ? String(fields[1]) : nil))
            }
        }
        if entries.isEmpty { entries = [("tcp://127.0.0.1:7400", nil)] }
        let keyPair: CurveKeyPair?
        do throws(CurveKeyFile.Problem) { keyPair = try clientKeyPath.map(CurveKeyFile.readKeyPair) } catch {
            throw CLIFailure(error.message, status: .usage)
        }
        var out: [BoxEndpoint] = []
        for e in entries {
            guard let keyPair else {
                if e.serverKey ?? sharedServerKey != nil {
                    throw CLIFailure("a server key needs --key too: \(keyKind) made by `earshot keygen`", status: .usage)
                }
                out.append(BoxEndpoint(endpoint: e.endpoint, security: nil))
                continue
            }
            guard let key = e.serverKey ?? sharedServerKey else {
                throw CLIFailure("\(e.endpoint): no server key (give --server-key, or one on its line of --servers-file)", status: .usage)
            }
            do throws(CurveKeyFile.Problem) {
                out.append(BoxEndpoint(endpoint: e.endpoint,
                                       security: ClientSecurity(serverPublicKey: try CurveKeyFile.key(fromTextOrFile: key), keyPair: keyPair)))
            } catch { throw CLIFailure(error.message, status: .usage) }
        }
        return out
    }

    /// The box's events endpoint: its RPC port + 1.
    var eventsEndpoint: String? {
        guard let colon = endpoint.lastIndex(of: ":"), let port = Int(endpoint[endpoint.index(after: colon)...]) else { return nil }
        return endpoint[..<colon] + ":\(port + 1)"
    }
}
