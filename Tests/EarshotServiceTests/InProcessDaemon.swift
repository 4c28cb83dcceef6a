import EarshotCore
import EarshotService
import EarshotSync
import EarshotTestSupport
import EarshotTransport
import Foundation
import Logging
import Testing

/// The tests of the service's logic (RPC answers, catalogs, the library, cues, capture problems
/// as the service tells them), each on an `InProcessDaemon`. `scripts/test.sh` runs them in a
/// process of their own (`swift test --filter InProcessDaemonTests`): their daemons' handlers
/// run on this process's thread pool, which the tests of real daemons and the CLI elsewhere in
/// the package block while they wait for their processes.
enum InProcessDaemonTests {}

/// earshotd's `Daemon`, built and run inside the test process from a `DaemonFolder` and the same
/// settings `DaemonHarness` gives the process, with RPC and events on ports the kernel picks
/// (`Daemon.rpcEndpoints` and `eventEndpoints` report them). The real client drives it over real
/// ZeroMQ on loopback, with CURVE on as shipped; what it logs is kept (`log`), in earshotd's
/// format.
///
/// Made only by `with`, which stops the daemon however the test ends and then checks that it let
/// go of the `Daemon` itself, its listening sockets and its threads (and reports the files it
/// keeps, see `expectNothingLeft`). Tests of what only a process shows (signals, its
/// descriptors, kill -9, start-up and exit, the CLI) use `DaemonHarness`.
final class InProcessDaemon: RunningDaemon, @unchecked Sendable {
    let directory: URL
    let clientKeys: [ClientRole: CurveKeyPair]
    let rpcEndpoint: String
    let eventsEndpoint: String
    let serverPublicKey: String?
    private let output = LogOutput()
    var log: String { output.text }

    private let daemon: Locked<Daemon?>
    /// The daemon once this harness let go of it: nil once nothing else holds it.
    private weak var released: Daemon?
    private let running: Task<Void, Never>
    private let stopping = Locked(false)

    /// Runs `body` with a daemon on a new `DaemonFolder` (made under `parent`, removed afterwards);
    /// `settings` are `--section.key=value` overrides, as earshotd takes them.
    static func with<T>(settings: [String] = [], under parent: URL? = nil,
                        _ body: (InProcessDaemon) async throws -> T) async throws -> T {
        let folder = try DaemonFolder(under: parent)
        return try await with(folder, settings: settings, body)
    }

    /// Runs `body` with a daemon on `folder`, as a previous daemon left it: a restart.
    static func with<T>(_ folder: DaemonFolder, settings: [String] = [],
                        _ body: (InProcessDaemon) async throws -> T) async throws -> T {
        let daemon = try InProcessDaemon(folder, settings: settings)
        let result: Result<T, any Error>
        do { result = .success(try await body(daemon)) } catch { result = .failure(error) }
        await daemon.stop()
        await daemon.expectNothingLeft()
        return try result.get()
    }

    private init(_ folder: DaemonFolder, settings: [String]) throws {
        // As earshotd does: a peer gone away is an error of the write, not the end of the process.
        signal(SIGPIPE, SIG_IGN)
        directory = folder.url
        clientKeys = folder.clientKeys
        var overrides: [(key: String, value: TOMLSubset.Value)] = []
        for argument in DaemonFolder.settings(for: directory) + settings {
            guard let override = DaemonConfiguration.override(fromArgument: argument) else {
                throw HarnessError("not a --section.key=value setting: \(argument)")
            }
            overrides.append(override)
        }
        let configuration: DaemonConfiguration
        do throws(DaemonConfiguration.Problem) {
            configuration = try DaemonConfiguration.load(text: "", origin: "the in-process test's settings", overrides: overrides)
        } catch {
            throw HarnessError(error.message)
        }
        var handler = EscapingLogHandler(StreamLogHandler(label: "earshotd", stream: output))
        handler.logLevel = Logger.Level(rawValue: configuration.logLevel) ?? .info
        let logger = Logger(label: "earshotd") { [handler] _ in handler }
        let daemon: Daemon
        do throws(EarshotError) {
            daemon = try Daemon(configuration: configuration, logger: logger)
        } catch {
            throw HarnessError("the daemon cannot start: \(error.message)\n\(output.text)")
        }
        self.daemon = Locked(daemon)
        released = daemon
        rpcEndpoint = daemon.rpcEndpoints[0]
        eventsEndpoint = daemon.eventEndpoints[0]
        let publicKeyFile = directory.appendingPathComponent("state/server.public").path
        serverPublicKey = configuration.securityMode == .curve ? try Self.readKey(publicKeyFile) : nil
        running = Task.detached { await daemon.run() }
        Self.live.withLock { $0 += 1 }
    }

    /// Graceful stop, as SIGTERM does it: returns once `run()` has returned. A test may stop the
    /// daemon itself (to start another on its folder); `with` stops it anyway.
    func stop() async {
        guard stopping.withLock({ stopping in defer { stopping = true }; return !stopping }) else { return }
        if let daemon = daemon.withLock({ $0 }) { await daemon.stop() }
        await running.value
        daemon.withLock { $0 = nil }
        Self.live.withLock { $0 -= 1 }
    }

    private static func readKey(_ path: String) throws -> String { try CurveKeyFile.readKey(path) }

    /// In-process daemons started and not yet stopped.
    private static let live = Locked(0)

    /// Threads only a daemon makes, with the kernel's 15-byte names: at most one of each per
    /// daemon still running once this one stopped. (libzmq's ZAP handler, "earshot-zap", is the
    /// process's, shared by every server in it and kept.)
    private static let daemonThreads = ["earshot-session", "earshot-catalog-watch"].map { String($0.prefix(15)) }

    /// Records an issue for what the stopped daemon still runs, holds open or keeps mapped once
    /// it had time to let go: the `Daemon` object (something keeps it), a listening socket on its
    /// ports, more of its threads than daemons run, files of its folder (the library's SQLite
    /// connections, the catalogs' mappings).
    private func expectNothingLeft() async {
        do {
            try await eventually("the stopped daemon let go of its threads, sockets, files and itself", within: .seconds(30),
                                 { self.unreleased() + self.kept() }, until: { $0.isEmpty })
        } catch {
            Issue.record("\(error)")
        }
    }

    /// What the stopped daemon still runs or listens with: itself (something keeps it), a
    /// listening socket on its ports, more of its threads than daemons run.
    private func unreleased() -> [String] {
        var left: [String] = []
        if released != nil { left.append("the Daemon object (something still holds it)") }
        let listening = Self.listeningPorts()
        for endpoint in [rpcEndpoint, eventsEndpoint] {
            if let port = endpoint.split(separator: ":").last.flatMap({ Int($0) }), listening.contains(port) {
                left.append("a socket listening on \(endpoint)")
            }
        }
        let threads = Self.threadNames()
        let running = Self.live.withLock { $0 }
        for name in Self.daemonThreads {
            let count = threads.filter { $0 == name }.count
            if count > running { left.append("\(count) \(name) threads for \(running) daemon(s) running") }
        }
        return left
    }

    /// The files of its folder the stopped daemon keeps open or mapped.
    private func kept() -> [String] {
        var left: [String] = []
        let folder = directory.path + "/"
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for fd in descriptors {
            if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)"), target.hasPrefix(folder) {
                left.append("descriptor \(fd) on \(target.dropFirst(folder.count))")
            }
        }
        for line in (ProcFile.text("/proc/self/maps") ?? "").split(separator: "\n") {
            if let start = line.range(of: folder) { left.append("a mapping of \(line[start.upperBound...])") }
        }
        return Array(Set(left)).sorted()
    }

    /// The TCP ports this process listens on (IPv4), from /proc/self/net/tcp.
    private static func listeningPorts() -> Set<Int> {
        var ports = Set<Int>()
        for line in (ProcFile.text("/proc/self/net/tcp") ?? "").split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            // sl, local address (hex ip:port), remote address, state (0A: LISTEN), …
            guard fields.count > 3, fields[3] == "0A", let port = fields[1].split(separator: ":").last.flatMap({ Int($0, radix: 16) })
            else { continue }
            ports.insert(port)
        }
        return ports
    }

    /// The names of this process's threads.
    private static func threadNames() -> [String] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { ProcFile.text("/proc/self/task/\($0)/comm")?.trimmingCharacters(in: .whitespacesAndNewlines) }
    }
}

/// Where an in-process daemon's log handler writes: kept, to be read as `log`.
private final class LogOutput: TextOutputStream, Sendable {
    private let written = Locked("")

    var text: String { written.withLock { $0 } }

    func write(_ string: String) {
        written.withLock { $0 += string }
    }
}
