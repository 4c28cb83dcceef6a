import ArgumentParser
import EarshotDashboard
import EarshotTransport
import Foundation

/// `earshot remote dashboard`: a page in the browser, kept live from the box's events.
struct RemoteDashboardCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dashboard",
        abstract: "Serve a live dashboard page of a box: what it hears, where, its cues and health.",
        discussion: """
            Follows the box as an ordinary client (the same keys as every remote command) and \
            serves a page on this computer; the box opens no new port. Open the address it \
            prints in a browser: the page shows the box's connection, session state, the \
            programme with a timeline whose cursor moves with the predicted position, the \
            programme's cues coloured by state (upcoming, started, ended, skipped; owed cues \
            outlined) with their lateness, capture health and the last matches. It updates as \
            events arrive, through a daemon restart, a seek or a channel change, and says when \
            the box is unreachable or refuses the key.

            The page is served on 127.0.0.1 unless --listen gives another address: anyone who \
            can reach that address can then read it, unless --token is set (the page's address \
            then carries ?token=…).

            Several boxes: --servers-file lists them (one endpoint per line, optionally followed \
            by its server public key, or a box's name on the LAN alone on its line, as `remote \
            catalog push` takes them); the page lists every box on one line, which opens into \
            its view on a click. It also shows each box's catalogs and their versions, and keeps \
            showing what an unreachable box last played, marked as last heard.

            Examples:
              earshot remote dashboard --server "Living room" --key tv-app.key
              earshot remote dashboard --servers-file fleet.txt --key viewer.key
              earshot remote dashboard --server tcp://10.0.0.5:7400 --server-key box.public --key k.key \\
                  --listen 0.0.0.0:8640 --token "$(openssl rand -hex 16)"
            """)

    @OptionGroup var remote: RemoteOptions
    @Option(name: .customLong("servers-file"), help: ArgumentHelp(
        "Follow every box of this file instead of --server: one endpoint per line, optionally followed by its server public key (its events on its port + 1), or a box's name on the LAN alone on its line.",
        valueName: "file"))
    var serversFile: String?
    @Option(help: ArgumentHelp("The daemon's event endpoint (default: the events port a box found by name announces, else the --server port + 1).", valueName: "tcp://host:port"))
    var events: String?
    @Option(help: ArgumentHelp("Where the page is served: an IPv4 address and port (port 0: any free port).", valueName: "address:port"))
    var listen = "127.0.0.1:8640"
    @Option(help: ArgumentHelp("A secret the page's address must carry (?token=…); set it whenever --listen reaches beyond this computer.", valueName: "text"))
    var token: String?
    @Option(help: ArgumentHelp("Stop after this many seconds.", valueName: "seconds")) var duration: Double?

    /// How the page names a box: its endpoint without "tcp://".
    static func shortName(_ endpoint: String) -> String {
        endpoint.hasPrefix("tcp://") ? String(endpoint.dropFirst(6)) : endpoint
    }

    /// --listen as address and port.
    private var listenAddress: (host: String, port: UInt16)? {
        guard let colon = listen.lastIndex(of: ":"), let port = UInt16(listen[listen.index(after: colon)...]) else { return nil }
        let host = String(listen[..<colon])
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts.allSatisfy({ UInt8($0) != nil }) else { return nil }
        return (host, port)
    }

    func validate() throws {
        guard listenAddress != nil else { throw ValidationError("--listen takes an IPv4 address and a port, as 127.0.0.1:8640 or 0.0.0.0:8640") }
        if let token, !DashboardServer.isValidToken(token) {
            throw ValidationError("--token takes letters, digits and - . _ ~ only (as `openssl rand -hex 16` makes)")
        }
        if let duration, !(duration > 0) { throw ValidationError("--duration must be a positive number of seconds") }
    }

    func run() throws {
        let (host, port) = listenAddress!
        if !host.hasPrefix("127."), token == nil {
            Terminal.error("warning: the dashboard on \(host) can be read by anyone who can reach this computer; set --token to require a secret")
        }
        let serverBox = BlockingBox<DashboardServer>()
        let timeout = Duration.milliseconds(Int(min(remote.timeout, 5) * 1000))
        let targets: [BoxLink.Target]
        if let serversFile {
            let boxes = try BoxEndpoint.fleet(servers: [], serversFile: serversFile, serverKey: remote.serverKey, clientKey: remote.clientKey,
                                              keyKind: "a client key")
            targets = try boxes.map { box throws(CLIFailure) in
                guard let events = box.eventsEndpoint else {
                    throw CLIFailure("\(box.endpoint): cannot derive its events endpoint (port + 1)", status: .usage)
                }
                return BoxLink.Target(name: box.name ?? Self.shortName(box.endpoint), rpc: box.endpoint, events: events, security: box.security, timeout: timeout)
            }
        } else {
            targets = [BoxLink.Target(name: Self.shortName(remote.server), rpc: remote.server, events: try remote.eventsEndpoint(given: events),
                                      security: try remote.security(), timeout: timeout)]
        }
        let links = targets.map { target in BoxLink(target) { serverBox.value.withLock { $0 }?.push() } }
        let server: DashboardServer
        do {
            server = try DashboardServer(host: host, port: port, token: token) {
                DashboardReport(boxes: links.map { $0.report() }, madeAtMs: Int64(Date().timeIntervalSince1970 * 1000))
            }
        } catch {
            throw CLIFailure("--listen \(listen): \(error)", status: .usage)
        }
        serverBox.value.withLock { $0 = server }
        let listen = self.listen, token = self.token
        try runUntilInterrupted(duration: duration) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    do { try await server.run() } catch is CancellationError {} catch {
                        throw CLIFailure("--listen \(listen): cannot serve the dashboard (\(error))", status: .usage)
                    }
                }
                defer { for link in links { link.stop() } }
                let shown: UInt16
                do { shown = try await server.port() } catch {
                    // The server's own failure (the address in use) says why better than the wait.
                    try await group.next()
                    throw CLIFailure("--listen \(listen): cannot serve the dashboard (\(error))", status: .usage)
                }
                for link in links {
                    do throws(TransportError) { try link.start() } catch {
                        throw CLIFailure("\(link.target.events): \(error)", status: .usage)
                    }
                }
                StandardOutput.flushEachLine()
                print("dashboard: http://\(host):\(shown)/" + (token.map { "?token=\($0)" } ?? ""))
                // Serves until interrupted; the server ends early only by failing.
                try await group.next()
            }
        }
    }
}
