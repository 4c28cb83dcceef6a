import EarshotCore
import EarshotTestSupport
import EarshotTransport
import Foundation
import Testing

/// What the tests need of a running daemon, whether it runs as a process (`DaemonHarness`) or
/// inside the test process (`InProcessDaemon`): its folder, the client keys it admits, the
/// endpoints it bound and what it logged.
protocol RunningDaemon: AnyObject, Sendable {
    /// The daemon's folder: `state/` and the programme `tv.wav` (see `DaemonFolder`).
    var directory: URL { get }
    /// One client key pair per role, all in the daemon's allow-list (names "viewer", "operator",
    /// "admin"): the tests run the daemon as shipped, with CURVE on.
    var clientKeys: [ClientRole: CurveKeyPair] { get }
    var rpcEndpoint: String { get }
    var eventsEndpoint: String { get }
    /// The daemon's public key, read from `state/server.public` once it started (nil with
    /// security "none").
    var serverPublicKey: String? { get }
    /// Everything the daemon logged so far.
    var log: String { get }
}

extension RunningDaemon {
    var allowListURL: URL { directory.appendingPathComponent("state/clients.allow") }

    /// CURVE keys for a client of `role` (nil with security "none").
    func security(_ role: ClientRole = .admin) -> ClientSecurity? {
        serverPublicKey.map { ClientSecurity(serverPublicKey: $0, keyPair: clientKeys[role]!) }
    }

    /// An RPC client of `role` (admin by default).
    func client(_ role: ClientRole = .admin) throws -> RpcClient {
        var configuration = RpcClient.Configuration()
        configuration.security = security(role)
        return try RpcClient(endpoint: rpcEndpoint, configuration: configuration)
    }
}

/// A daemon's folder as the tests make it, in a temporary folder of its own (removed with the
/// value): `state/` with the fixture's catalog (`catalogs/show.earcat`) and an allow-list of one
/// key per role, and `tv.wav`, the fixture's programme, which the daemon plays in real time and
/// in a loop, standing in for the TV.
final class DaemonFolder: Sendable {
    let scratch: TemporaryDirectory
    let clientKeys: [ClientRole: CurveKeyPair]
    var url: URL { scratch.url }

    /// `parent` is where the folder is made (the system's temporary folder by default).
    init(under parent: URL? = nil) throws {
        scratch = try TemporaryDirectory("earshotd-test", under: parent)
        try FileManager.default.createDirectory(at: scratch.url("state/catalogs"), withIntermediateDirectories: true)
        var keys: [ClientRole: CurveKeyPair] = [:]
        for role in ClientRole.allCases { keys[role] = try CurveKeyPair.generate() }
        clientKeys = keys
        try scratch.write("state/clients.allow",
                          text: "# test clients\n" + DaemonHarness.allowList(ClientRole.allCases.map { (keys[$0]!, $0.rawValue, $0) }))
        let fixture = DaemonFixture.shared
        try scratch.write("state/catalogs/show.earcat", fixture.catalogBytes)
        try WAVFile.write(fixture.programme, sampleRate: 16_000, to: scratch.path("tv.wav"))
    }

    /// The settings that run earshotd on the folder at `directory`: its state there, the
    /// programme file played in a loop, RPC and events on loopback ports the kernel picks (port
    /// 0; the daemon reports what it bound), and debug logs. Settings given after them win.
    static func settings(for directory: URL) -> [String] {
        ["--daemon.state_directory=\(directory.appendingPathComponent("state").path)",
         "--audio.source=file", "--audio.file=\(directory.appendingPathComponent("tv.wav").path)", "--audio.loop=true",
         "--rpc.listen=tcp://127.0.0.1:0", "--events.listen=tcp://127.0.0.1:0", "--daemon.log_level=debug"]
    }
}

/// Runs the built `earshotd` as a real process on loopback ports, on a `DaemonFolder`: for what
/// only a process shows (signals, its file descriptors and mappings, kill -9, start-up and exit
/// statuses, running as another user, the CLI end to end). The service's logic is tested on an
/// `InProcessDaemon`.
final class DaemonHarness: RunningDaemon, @unchecked Sendable {
    let directory: URL
    let process = Process()
    private var logURL = URL(fileURLWithPath: "/dev/null")
    private(set) var rpcEndpoint = ""
    private(set) var eventsEndpoint = ""
    let clientKeys: [ClientRole: CurveKeyPair]
    private(set) var serverPublicKey: String?
    /// Signalled when the process ends.
    private let exited = DispatchSemaphore(value: 0)

    /// Allow-list lines for `entries`.
    static func allowList(_ entries: [(CurveKeyPair, String, ClientRole)]) -> String {
        entries.map { "\($0.0.publicKey) \($0.1) \($0.2.rawValue)\n" }.joined()
    }

    /// The daemon executable: $EARSHOTD, else next to the test bundle (the products folder).
    static func executable() throws -> String {
        var candidates: [String] = []
        if let explicit = ProcessInfo.processInfo.environment["EARSHOTD"] { candidates.append(explicit) }
        if let bundle = Bundle.main.executableURL?.deletingLastPathComponent() {
            candidates.append(bundle.appendingPathComponent("earshotd").path)
        }
        candidates.append(Repository.root.appendingPathComponent(".build/debug/earshotd").path)
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw HarnessError("earshotd not found (looked at \(candidates.joined(separator: ", "))); `swift build` first")
        }
        return found
    }

    /// Starts the daemon on a new `DaemonFolder`; `settings` are extra `--section.key=value`
    /// overrides. With `fileLimit`, the daemon runs with that many file descriptors at most
    /// (soft and hard, as `prlimit --nofile` sets them), so that running out of them takes
    /// seconds, not thousands of connections.
    ///
    /// With `unprivileged`, the folder is given to `nobody` and the daemon runs as nobody:nogroup
    /// (through `setpriv`, which execs: the pid is the daemon's), so that file permissions apply
    /// to it although the tests run as root.
    ///
    /// `parent` is where the daemon's folder is made (the system's temporary folder by default).
    /// With `cpus` (a `taskset` list, e.g. "0"), the daemon runs on those CPUs only.
    init(settings: [String] = [], fileLimit: Int? = nil, unprivileged: Bool = false, under parent: URL? = nil,
         cpus: String? = nil) async throws {
        self.fileLimit = fileLimit
        self.unprivileged = unprivileged
        self.cpus = cpus
        let folder = try DaemonFolder(under: parent)
        owned = folder
        directory = folder.url
        clientKeys = folder.clientKeys
        self.settings = settings
        if unprivileged { try Self.giveToNobody(directory) }
        try launch()
        try await waitUntilListening()
    }

    /// Starts a daemon again on the state of a stopped (or killed) one, as it was left: nothing
    /// is rewritten. `directory` is not removed twice: the first harness owns it. With
    /// `waitUntilListening: false` it returns as soon as the process runs.
    init(reusing folder: URL, clientKeys: [ClientRole: CurveKeyPair] = [:], settings: [String] = [],
         waitUntilListening: Bool = true, unprivileged: Bool = false) async throws {
        fileLimit = nil
        cpus = nil
        owned = nil
        self.unprivileged = unprivileged
        directory = folder
        self.clientKeys = clientKeys
        self.settings = settings
        try launch()
        if waitUntilListening { try await self.waitUntilListening() }
    }

    /// The folder this harness made, removed after it (nil when it reuses another's).
    private let owned: DaemonFolder?
    /// The extra `--section.key=value` settings.
    private let settings: [String]
    private let fileLimit: Int?
    private let cpus: String?
    private let unprivileged: Bool

    /// The user an unprivileged daemon runs as (`setpriv --reuid`), and its group.
    static let unprivilegedUser = (name: "nobody", group: "nogroup")

    /// Whether the tests run as root, who ignores file permissions: then an unprivileged daemon
    /// runs as nobody. Run by another user, the daemon runs as that user, whom permissions bind.
    static let runningAsRoot = getuid() == 0

    /// Gives `folder` and everything in it to the unprivileged user (chown -R); nothing to do
    /// when the tests do not run as root (the daemon is then their own user).
    static func giveToNobody(_ folder: URL) throws {
        guard runningAsRoot else { return }
        guard let user = getpwnam(unprivilegedUser.name), let group = getgrnam(unprivilegedUser.group) else {
            throw HarnessError("no user \(unprivilegedUser.name) or group \(unprivilegedUser.group)")
        }
        let (uid, gid) = (user.pointee.pw_uid, group.pointee.gr_gid)
        var paths = [folder.path]
        if let walker = FileManager.default.enumerator(atPath: folder.path) {
            for case let relative as String in walker { paths.append(folder.appendingPathComponent(relative).path) }
        }
        for path in paths where lchown(path, uid, gid) != 0 {
            throw HarnessError("chown \(path): \(String(cString: strerror(errno)))")
        }
    }

    private func launch() throws {
        logURL = directory.appendingPathComponent("earshotd.log")
        _ = FileManager.default.createFile(atPath: logURL.path, contents: nil)
        let log = try FileHandle(forWritingTo: logURL)
        let daemon = try Self.executable()
        // prlimit, taskset and setpriv (util-linux, on every Debian) set the limits, the CPUs or
        // the user and exec:
        // the pid is the daemon's.
        var command = [daemon]
        if let fileLimit { command = ["/usr/bin/prlimit", "--nofile=\(fileLimit):\(fileLimit)"] + command }
        if let cpus { command = ["/usr/bin/taskset", "-c", cpus] + command }
        if unprivileged, Self.runningAsRoot {
            command = ["/usr/bin/setpriv", "--reuid=\(Self.unprivilegedUser.name)", "--regid=\(Self.unprivilegedUser.group)",
                       "--clear-groups"] + command
        }
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst()) + DaemonFolder.settings(for: directory) + settings
        process.standardOutput = log
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        let exited = self.exited
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
    }

    /// Waits until the daemon logs the endpoints it bound (port 0 → a free port), and takes them
    /// and its public key. `init` does unless told not to.
    func waitUntilListening() async throws {
        let endpoints: (String, String)?
        do {
            endpoints = try await eventually("earshotd logs the endpoints it bound", within: .seconds(15), {
                if let line = self.log.split(separator: "\n").first(where: { $0.contains("listening on") }) {
                    let words = line.split(separator: " ").map(String.init)
                    if let r = words.firstIndex(of: "RPC"), let e = words.firstIndex(of: "events") {
                        return (words[r + 1].trimmingCharacters(in: CharacterSet(charactersIn: ";")), words[e + 1])
                    }
                }
                guard self.process.isRunning else { throw HarnessError("earshotd exited early: \(self.log)") }
                return nil
            }, until: { $0 != nil })
        } catch let timedOut as WaitTimedOut {
            let stacks = Self.threadStacks(of: process.processIdentifier)
            stop()
            throw HarnessError("earshotd did not report its endpoints (\(timedOut)): \(self.log)\nits threads then:\n\(stacks)")
        }
        (rpcEndpoint, eventsEndpoint) = endpoints!
        if !settings.contains("--security.mode=none") {
            serverPublicKey = try CurveKeyFile.readKey(directory.appendingPathComponent("state/server.public").path)
        }
    }

    var log: String { (try? String(contentsOf: logURL, encoding: .utf8)) ?? "" }

    /// Every thread's stack in `pid` (gdb in batch mode), for a daemon that hangs: the failure
    /// then says where. Each thread's kernel wait channel when gdb is missing.
    static func threadStacks(of pid: Int32) -> String {
        let gdb = "/usr/bin/gdb"
        if FileManager.default.isExecutableFile(atPath: gdb) {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: gdb)
            p.arguments = ["-batch", "-nx", "-p", "\(pid)", "-ex", "thread apply all bt 30"]
            let out = Pipe()
            p.standardOutput = out
            p.standardError = out
            p.standardInput = FileHandle.nullDevice
            if (try? p.run()) != nil {
                let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                p.waitUntilExit()
                return text.split(separator: "\n").filter { $0.hasPrefix("#") || $0.hasPrefix("Thread") }.joined(separator: "\n")
            }
        }
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.sorted().map { tid in
            let name = ProcFile.text("/proc/\(pid)/task/\(tid)/comm")?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
            let wait = ProcFile.text("/proc/\(pid)/task/\(tid)/wchan") ?? "?"
            return "\(tid) \(name): \(wait)"
        }.joined(separator: "\n")
    }

    /// The daemon's resident memory now, in MiB (VmRSS).
    var residentMegabytes: Double {
        let status = ProcFile.text("/proc/\(process.processIdentifier)/status") ?? ""
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "")
        else { return 0 }
        return kilobytes / 1024
    }

    /// The file descriptors the daemon has open now.
    var openDescriptors: Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(process.processIdentifier)/fd").count) ?? 0
    }

    /// SIGTERM, then waits up to `seconds` for a clean exit; returns the exit status (nil: killed,
    /// or never started). Generous: on a loaded 2-core machine (the library's kill loops beside
    /// it, the VM at half speed) a daemon just started took longer than 5 s to stop cleanly.
    @discardableResult
    func stop(within seconds: Double = 15) -> Int32? {
        guard process.processIdentifier != 0 else { return nil }
        if process.isRunning {
            process.terminate()
            if exited.wait(timeout: .now() + seconds) == .timedOut {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                return nil
            }
        }
        // The process has ended, so this returns at once; it is still needed: `run()` gives the
        // Process a run-loop source that retains the Process, and only `waitUntilExit()` lets go
        // of it (swift-corelibs-foundation). Without it every harness's Process, with its
        // arguments and log file handle (still open), stays in that cycle until exit.
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// SIGKILL: the daemon gets no chance to clean up, as in a crash or a power cut.
    func kill9() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit {
        stop()  // before `owned` removes the folder
    }
}

/// Expects `body` to fail with `code`.
func expectCode(_ code: RpcStatusCode, _ body: () async throws(RpcError) -> Void,
                sourceLocation: SourceLocation = #_sourceLocation) async {
    do throws(RpcError) {
        try await body()
        Issue.record("expected \(code), the call succeeded", sourceLocation: sourceLocation)
    } catch {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
    }
}

struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A catalog of three synthetic pieces and a programme: 40 s of piece 1 from 10 s in.
final class DaemonFixture: @unchecked Sendable {
    static let shared = DaemonFixture()
    let audio: [[Float]]
    let catalogBytes: [UInt8]
    let programme: [Float]
    static let programmeStart = 10.0

    private init() {
        audio = (0..<3).map { SyntheticMusic.make(seed: UInt64(300 + $0), duration: 60) }
        var catalog = CustomCatalog()
        for (i, samples) in audio.enumerated() {
            try! catalog.addReferenceSignature(try! SyntheticSignature.of(samples),
                                               representing: [MediaItem(id: "piece\(i)", title: "Piece \(i)")])
        }
        catalogBytes = try! catalog.dataRepresentation()
        programme = SyntheticSignature.excerpt(audio[1], start: Self.programmeStart, duration: 40)
    }
}
