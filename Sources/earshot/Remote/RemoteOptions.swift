import ArgumentParser
import Dispatch
import EarshotSync
import EarshotTransport
import EarshotWire
import Foundation

/// Options every `remote` command takes.
struct RemoteOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "The daemon's RPC endpoint, or the name of a box on the LAN (`earshot remote discover`; NAME or NAME.local), whose announced key is used unless --server-key or EARSHOT_SERVER_KEY gives one.",
        valueName: "tcp://host:port|NAME"))
    var server = "tcp://127.0.0.1:7400"

    @Option(help: ArgumentHelp("Seconds to wait for an answer before giving up.", valueName: "seconds"))
    var timeout: Double = 15

    @Option(name: .customLong("server-key"), help: ArgumentHelp(
        "The daemon's public key (its state folder's server.public), as text or a file; env EARSHOT_SERVER_KEY. A key text that begins with \"-\" goes as --server-key=KEY.",
        valueName: "Z85|file"))
    var serverKey: String?

    @Option(name: .customLong("key"), help: ArgumentHelp(
        "This client's secret key file, made by `earshot keygen`; env EARSHOT_CLIENT_KEY.", valueName: "file"))
    var clientKey: String?

    /// What a box found by name announced, set by `validate` (not for people to give): its
    /// events endpoint, and whether --server-key came from its announcement.
    @Option(name: .customLong("announced-events"), help: .private) var announcedEvents: String?
    @Flag(name: .customLong("announced-key"), help: .private) var keyFromAnnouncement = false

    /// Seconds a name given to --server is looked for on the LAN.
    static let discoveryTimeout = 3.0

    mutating func validate() throws {
        guard timeout.isFinite, timeout > 0 else { throw ValidationError("--timeout must be a positive number of seconds") }
        if server.hasPrefix("tcp://") || server.hasPrefix("ipc://") { return }
        guard !server.contains("://"), !server.contains(":"), !server.contains("/"), !server.isEmpty else {
            throw ValidationError("--server must look like tcp://host:port (or ipc://path) or name a box on the LAN, not \(server)")
        }
        // A box's name: its announced endpoint, and its announced key unless one is given.
        let box: BoxDiscovery.Box
        do { box = try BoxDiscovery.box(named: server, timeout: Self.discoveryTimeout) } catch {
            // ArgumentParser would wrap an error of `validate` in its usage text: said here, as `main` says it.
            Terminal.error("earshot: " + error.message)
            Foundation.exit(error.status.rawValue)
        }
        server = box.server
        announcedEvents = box.events
        let environmentKey = ProcessInfo.processInfo.environment["EARSHOT_SERVER_KEY"].flatMap { $0.isEmpty ? nil : $0 }
        if serverKey == nil, environmentKey == nil, let key = box.announcement.serverPublicKey {
            serverKey = key
            keyFromAnnouncement = true
        }
    }

    /// The CURVE keys from the options or the environment; nil when neither names any (a
    /// daemon with security "none").
    func security() throws(CLIFailure) -> ClientSecurity? {
        let environment = ProcessInfo.processInfo.environment
        let server = serverKey ?? environment["EARSHOT_SERVER_KEY"].flatMap { $0.isEmpty ? nil : $0 }
        let client = clientKey ?? environment["EARSHOT_CLIENT_KEY"].flatMap { $0.isEmpty ? nil : $0 }
        switch (server, client) {
        case (nil, nil):
            return nil
        case (nil, _):
            throw CLIFailure("--key needs --server-key (the daemon's server.public) too", status: .usage)
        case (_, nil) where keyFromAnnouncement:
            throw CLIFailure("the box uses CURVE: give --key, a client key made by `earshot keygen` whose public half is in the box's allow-list", status: .usage)
        case (_, nil):
            throw CLIFailure("--server-key needs --key too: make a client key with `earshot keygen` and add it to the daemon's allow-list", status: .usage)
        case (let server?, let client?):
            do throws(CurveKeyFile.Problem) {
                return ClientSecurity(serverPublicKey: try CurveKeyFile.key(fromTextOrFile: server),
                                      keyPair: try CurveKeyFile.readKeyPair(client))
            } catch {
                throw CLIFailure(error.message, status: .usage)
            }
        }
    }

    func client() throws(CLIFailure) -> RpcClient {
        let security = try security()
        do {
            var configuration = RpcClient.Configuration()
            configuration.security = security
            configuration.defaultTimeout = .milliseconds(Int(timeout * 1000))
            return try RpcClient(endpoint: server, configuration: configuration)
        } catch {
            throw CLIFailure("\(server): \(error)", status: .usage)
        }
    }

    /// One unary call on a fresh connection, its failure turned into the command's error.
    func call<Req, Res>(_ method: RpcMethod<Req, Res>, _ request: Req) throws -> Res {
        try runBlocking { () throws in
            let client = try client()
            defer { client.close() }
            do throws(RpcError) { return try await client.call(method, request) } catch { throw failure(error) }
        }
    }

    /// The daemon's events endpoint: `given` (an --events option), else the one a box found by
    /// name announced, else the --server port + 1.
    func eventsEndpoint(given: String?) throws(CLIFailure) -> String {
        if let given { return given }
        if let announced = announcedEvents { return announced }
        guard let derived = BoxEndpoint(endpoint: server, security: nil).eventsEndpoint else {
            throw CLIFailure("cannot derive the events endpoint from \(server); give --events", status: .usage)
        }
        return derived
    }

    /// Maps an RPC failure to one line naming the server and the status. The client tells a
    /// refused key, a wrong server key and silence apart; without keys, the line says how to
    /// give them.
    func failure(_ error: RpcError) -> CLIFailure {
        var text = "\(server): \(error.code): \(error.message)"
        if error.code == .deadlineExceeded || error.code == .unauthenticated, (try? security()) == nil {
            text += "; if the daemon uses CURVE (the default), give --server-key and --key"
        }
        return CLIFailure(text, status: .remote)
    }
}
