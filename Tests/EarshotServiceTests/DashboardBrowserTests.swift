import EarshotSync
import EarshotTestSupport
import EarshotTransport
import EarshotWire
import Foundation
import Testing

/// `earshot remote dashboard` against a real earshotd, its page read by a real browser
/// (headless Chromium): the programme, the moving cursor, a cue turning to started, a refused key.
@Suite("earshot remote dashboard in a browser", .serialized)
struct DashboardBrowserTests {
    /// A running `earshot remote dashboard` and the address it printed.
    final class Dashboard {
        let process = Process()
        let url: String
        private let output = Pipe()
        private let errors = try? TemporaryDirectory("earshot-dashboard-stderr")

        init(_ arguments: [String]) throws {
            let binary = ((try DaemonHarness.executable()) as NSString).deletingLastPathComponent + "/earshot"
            process.executableURL = URL(fileURLWithPath: binary)
            process.arguments = ["remote", "dashboard", "--listen", "127.0.0.1:0", "--duration", "120"] + arguments
            process.standardOutput = output
            if let errors, FileManager.default.createFile(atPath: errors.path("stderr"), contents: nil) {
                process.standardError = try FileHandle(forWritingTo: errors.url("stderr"))
            }
            process.standardInput = FileHandle.nullDevice
            try process.run()
            // The first line is the address: "dashboard: http://127.0.0.1:PORT/".
            var line = Data()
            while let byte = try output.fileHandleForReading.read(upToCount: 1), !byte.isEmpty, byte != Data("\n".utf8) { line += byte }
            let text = String(decoding: line, as: UTF8.self)
            guard text.hasPrefix("dashboard: ") else {
                let said = (try? errors.map { try String(contentsOfFile: $0.path("stderr"), encoding: .utf8) }) ?? nil
                throw HarnessError("the dashboard printed \"\(text)\", not its address; stderr: \(said ?? "")")
            }
            url = String(text.dropFirst("dashboard: ".count))
        }

        deinit {
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
        }
    }

    /// The page's rendered DOM (`rendered`) as headless Chromium has it after loading and
    /// running for `budget` ms.
    static func dom(_ url: String, budget: Int = 1500) throws -> String {
        rendered(try rawDump(url, budget: budget))
    }

    /// The rendered part of a dumped page: its `<header>` and `<main>`, without the script, whose
    /// templates hold every class name and word the page can show.
    static func rendered(_ dom: String) -> String {
        guard let start = dom.range(of: "<header"), let end = dom.range(of: "<script") else { return "" }
        return String(dom[start.lowerBound..<end.lowerBound])
    }

    /// Keeps a screenshot of the page as a test artifact: .build/test-artifacts/dashboard-NAME.png.
    static func screenshot(_ url: String, name: String) throws {
        let folder = Repository.root.appendingPathComponent(".build/test-artifacts")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let profile = try TemporaryDirectory("earshot-chromium")
        _ = try ExternalTool.run(chromium, ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
                                            "--user-data-dir=\(profile.path)", "--virtual-time-budget=1500", "--window-size=1100,560",
                                            "--screenshot=\(folder.appendingPathComponent("dashboard-\(name).png").path)", url])
    }

    /// The attribute `name` of the first element whose tag text contains `marker`.
    static func attribute(_ name: String, ofElementWith marker: String, in dom: String) -> String? {
        guard let at = dom.range(of: marker) else { return nil }
        let start = dom[..<at.lowerBound].lastIndex(of: "<") ?? at.lowerBound
        let tag = dom[start...].prefix { $0 != ">" }
        guard let value = tag.range(of: name + "=\"") else { return nil }
        return String(tag[value.upperBound...].prefix { $0 != "\"" })
    }

    private func keys(_ daemon: DaemonHarness, _ role: ClientRole) throws -> [String] {
        let keyFile = daemon.directory.appendingPathComponent("\(role.rawValue).key").path
        try CurveKeyFile.writeSecret(try #require(daemon.clientKeys[role]), to: keyFile, comment: "test \(role.rawValue)")
        return ["--server", daemon.rpcEndpoint, "--events", daemon.eventsEndpoint,
                "--server-key=" + (try #require(daemon.serverPublicKey)), "--key", keyFile]
    }

    @Test func thePageFollowsTheProgrammeAndItsCues() async throws {
        let daemon = try await DaemonHarness()
        let operatorClient = try daemon.client(.operator)
        defer { operatorClient.close() }
        try await eventually("the box follows the programme", every: .milliseconds(100)) {
            try await operatorClient.call(Methods.Session.getSnapshot, Earshot_V1_GetSnapshotRequest()).currentMatch.mediaItem.id == "piece1"
        }
        // The programme plays piece 1 from 10 s to 50 s, looping: a cue every 8 s starts within 10 s.
        var set = Earshot_V1_SetCuesRequest()
        set.reference.mediaItemID = "piece1"
        set.cues = [14.0, 22, 30, 38, 46].map { start in
            var cue = Earshot_V1_Cue()
            cue.id = "q\(Int(start))"
            cue.cueClass = "com.example.quiz"
            cue.start = start
            cue.duration = 3
            return cue
        }
        _ = try await operatorClient.call(Methods.Cues.setCues, set, timeout: .seconds(30))

        let dashboard = try Dashboard(try keys(daemon, .viewer))
        let first = try await eventually("the page shows the programme", within: .seconds(20), every: .milliseconds(500), {
            try Self.dom(dashboard.url)
        }, until: { $0.contains("class=\"programme-title\"") && $0.contains("data-cue=\"q46\"") })
        #expect(Self.attribute("data-connection", ofElementWith: "class=\"fleet-line\"", in: first) == "connected")
        #expect(first.contains("show v"), "the catalog and its version")
        let title = try #require(first.range(of: "class=\"programme-title\">")).upperBound
        #expect(first[title...].hasPrefix("Piece 1") || first[title...].hasPrefix("piece1"), "\(first[title...].prefix(40))")

        // The cursor moves with the programme between two looks a second apart.
        let before = try #require(Double(Self.attribute("data-position", ofElementWith: "class=\"cursor\"", in: first) ?? ""))
        try await Task.sleep(for: .seconds(1.5))
        let later = try Self.dom(dashboard.url)
        let after = try #require(Double(Self.attribute("data-position", ofElementWith: "class=\"cursor\"", in: later) ?? ""))
        // (Unless the programme looped back from 50 s to 10 s in between.)
        #expect((after > before + 0.5 && after < before + 4) || before > 46, "the cursor stood at \(before) s, then at \(after) s")

        // A cue turns to started once the programme passes it.
        let started = try await eventually("a cue turns to started", within: .seconds(20), every: .milliseconds(500), {
            try Self.dom(dashboard.url)
        }, until: { $0.contains("data-status=\"started\"") })
        #expect(started.contains("ms late"), "a started cue shows its lateness")
        try Self.screenshot(dashboard.url, name: "following")
    }

    @Test func aRestartedBoxIsShownReconnectingThenFollowedAgain() async throws {
        let daemon = try await DaemonHarness()
        let dashboard = try Dashboard(try keys(daemon, .viewer))
        let before = try await eventually("the page follows the box", within: .seconds(20), every: .milliseconds(500), {
            try Self.dom(dashboard.url)
        }, until: { $0.contains("data-connection=\"connected\"") && $0.contains("class=\"programme-title\"") })
        let firstStart = Self.text(after: "(daemon start ", in: before)

        #expect(daemon.stop() == 0)
        let gone = try await eventually("the page says the box is unreachable", within: .seconds(30), every: .milliseconds(500), {
            try Self.dom(dashboard.url)
        }, until: { $0.contains("data-connection=\"reconnecting\"") })
        #expect(gone.contains("unreachable, reconnecting"))
        try Self.screenshot(dashboard.url, name: "reconnecting")

        // The same box again, on the same ports and state: a new daemon start.
        let again = try await DaemonHarness(reusing: daemon.directory, clientKeys: daemon.clientKeys,
                                            settings: ["--rpc.listen=\(daemon.rpcEndpoint)", "--events.listen=\(daemon.eventsEndpoint)"])
        defer { _ = again.stop() }
        let back = try await eventually("the page follows the restarted box", within: .seconds(30), every: .milliseconds(500), {
            try Self.dom(dashboard.url)
        }, until: { $0.contains("data-connection=\"connected\"") && $0.contains("class=\"programme-title\"") })
        let secondStart = Self.text(after: "(daemon start ", in: back)
        #expect(firstStart != nil && secondStart != nil && firstStart != secondStart, "daemon start \(firstStart ?? "?") then \(secondStart ?? "?")")
    }

    /// The text after `marker` up to the next ")" or "<".
    static func text(after marker: String, in dom: String) -> String? {
        guard let at = dom.range(of: marker) else { return nil }
        return String(dom[at.upperBound...].prefix { $0 != ")" && $0 != "<" })
    }

    /// Two free loopback ports in a row (RPC, then events on the next), as a servers file implies.
    static func freePortPair() throws -> Int {
        for _ in 0..<50 {
            let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(probe) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(probe, $0, length) == 0 && getsockname(probe, $0, &length) == 0 }
            }
            guard bound else { continue }
            let port = Int(UInt16(bigEndian: address.sin_port))
            let next = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(next) }
            var second = address
            second.sin_port = UInt16(port + 1).bigEndian
            let free = withUnsafeMutablePointer(to: &second) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(next, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
            if free, port < 65_000 { return port }
        }
        throw HarnessError("no two free ports in a row")
    }

    @Test func aFleetFileShowsEveryBoxOnALineOfItsOwn() async throws {
        var daemons: [DaemonHarness] = []
        var lines: [String] = []
        for _ in 0..<2 {
            let port = try Self.freePortPair()
            let daemon = try await DaemonHarness(settings: ["--rpc.listen=tcp://127.0.0.1:\(port)", "--events.listen=tcp://127.0.0.1:\(port + 1)"])
            daemons.append(daemon)
            lines.append("tcp://127.0.0.1:\(port) \(try #require(daemon.serverPublicKey))")
        }
        // Each box has keys of its own: the second allows the first's viewer key too, which the
        // dashboard uses for both.
        let keyFile = daemons[0].directory.appendingPathComponent("viewer.key").path
        try CurveKeyFile.writeSecret(try #require(daemons[0].clientKeys[.viewer]), to: keyFile, comment: "test viewer")
        let allow = try FileHandle(forWritingTo: daemons[1].allowListURL)
        try allow.seekToEnd()
        try allow.write(contentsOf: Data(DaemonHarness.allowList([(try #require(daemons[0].clientKeys[.viewer]), "dashboard", .viewer)]).utf8))
        try allow.close()
        let fleet = daemons[0].directory.appendingPathComponent("fleet.txt")
        try Data(("# two boxes\n" + lines.joined(separator: "\n") + "\n").utf8).write(to: fleet)

        let dashboard = try Dashboard(["--servers-file", fleet.path, "--key", keyFile])
        let dom = try await eventually("the page shows both boxes following", within: .seconds(30), every: .milliseconds(500), {
            try Self.dom(dashboard.url)
        }, until: { $0.components(separatedBy: "data-connection=\"connected\"").count == 3 })
        #expect(dom.contains("data-index=\"0\"") && dom.contains("data-index=\"1\"") && !dom.contains("data-index=\"2\""))
        #expect(dom.components(separatedBy: "class=\"fleet-programme\">Piece 1").count == 3, "each line names what its box plays")
        #expect(!dom.contains("<section class=\"box\" data-box=\"127.0.0.1:"), "with several boxes, each opens on a click")
        try Self.screenshot(dashboard.url, name: "fleet")
        for daemon in daemons { _ = daemon.stop() }
    }

    @Test func aTokenGuardsThePageAndItsData() async throws {
        let daemon = try await DaemonHarness()
        let dashboard = try Dashboard(try keys(daemon, .viewer) + ["--token", "s3cret-Token_1"])
        #expect(dashboard.url.hasSuffix("/?token=s3cret-Token_1"))
        let page = try await eventually("the page with its token follows the box", within: .seconds(20), every: .milliseconds(500), {
            try Self.dom(dashboard.url)
        }, until: { $0.contains("data-connection=\"connected\"") && $0.contains("class=\"programme-title\"") })
        #expect(page.contains("data-cue") == false, "no cues were set")
        let base = String(dashboard.url.prefix { $0 != "?" })
        for refused in [base, base + "?token=s3cret-Token_2", base + "state.json", base + "state.json?token=wrong"] {
            let raw = try Self.rawDump(refused)
            #expect(raw.contains("Refused: open the dashboard"), "\(refused) was served without its token")
            #expect(!raw.contains("fleet-line"), "\(refused) showed the page")
        }
    }

    /// The whole dumped document of `url` (for answers that are not the page), after `budget`
    /// ms of the page's own time when given.
    static func rawDump(_ url: String, budget: Int? = nil) throws -> String {
        try #require(FileManager.default.isExecutableFile(atPath: chromium), "chromium is required at \(chromium) (apt-get install chromium)")
        let profile = try TemporaryDirectory("earshot-chromium")
        let arguments = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir=\(profile.path)"]
            + (budget.map { ["--virtual-time-budget=\($0)"] } ?? []) + ["--dump-dom", url]
        return String(decoding: try ExternalTool.run(chromium, arguments).output, as: UTF8.self)
    }

    /// Headless Chromium from Debian, which the tests drive.
    static let chromium = "/usr/bin/chromium"

    @Test func anAddressInUseIsAOneLineError() throws {
        let port = try Self.freePortPair()
        let taken = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(taken) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(taken, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        try #require(bound && listen(taken, 1) == 0)
        let binary = ((try DaemonHarness.executable()) as NSString).deletingLastPathComponent + "/earshot"
        let run = try ExternalTool.run(binary, ["remote", "dashboard", "--listen", "127.0.0.1:\(port)", "--duration", "5"])
        #expect(run.status == 2)
        #expect(run.output.isEmpty, "it printed an address it does not serve")
        let lines = run.errors.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].hasPrefix("earshot: --listen 127.0.0.1:\(port): cannot serve the dashboard")
                && lines[0].contains("Address already in use"), "\(run.errors)")
    }

    @Test func aRefusedKeyIsShownAsSuch() async throws {
        let daemon = try await DaemonHarness()
        let stranger = try CurveKeyPair.generate()
        let keyFile = daemon.directory.appendingPathComponent("stranger.key").path
        try CurveKeyFile.writeSecret(stranger, to: keyFile, comment: "not in the allow-list")
        let dashboard = try Dashboard(["--server", daemon.rpcEndpoint, "--events", daemon.eventsEndpoint,
                                       "--server-key=" + (try #require(daemon.serverPublicKey)), "--key", keyFile])
        let dom = try await eventually("the page shows the refusal", within: .seconds(20), every: .milliseconds(500), {
            try Self.dom(dashboard.url)
        }, until: { $0.contains("data-connection=\"refused\"") })
        #expect(dom.contains("refused the key"))
        #expect(dom.contains("data-problem"), "the refusal's reason is shown")
        try Self.screenshot(dashboard.url, name: "refused")
    }
}
