import EarshotSync
import EarshotTestSupport
import EarshotTransport
import EarshotWire
import Foundation
import Testing

/// `earshot remote dashboard` against a real earshotd, its page in a real browser (headless
/// Chromium, a page kept open through the DevTools protocol, or loaded afresh with --dump-dom):
/// the programme and its catalogs, the moving cursor, cues turning to started, a seek, a channel
/// change, a restart, a fleet, a token and a refused key.
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

    /// A page kept open in headless Chromium, as a person watching it.
    static func livePage(_ url: String) async throws -> HeadlessBrowser {
        let browser = try HeadlessBrowser(width: 1100, height: 700)
        try await browser.open(url)
        return browser
    }

    /// Keeps a screenshot of the live page as a test artifact: .build/test-artifacts/dashboard-NAME.png.
    static func screenshot(_ browser: HeadlessBrowser, name: String) async throws {
        let folder = Repository.root.appendingPathComponent(".build/test-artifacts")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try await browser.screenshot(to: folder.appendingPathComponent("dashboard-\(name).png").path)
    }

    /// Where the page's cursor stands (reference seconds), nil without a programme.
    static func cursor(_ browser: HeadlessBrowser) async throws -> Double? {
        try await browser.evaluate("document.querySelector('.cursor') && document.querySelector('.cursor').dataset.position")
            .flatMap(Double.init)
    }

    /// A cue status the page drew (`window.earshotCueChanges`).
    struct CueChange: Decodable {
        let cue: String
        let status: String
        let atMs: Int64
    }

    /// Milliseconds since the epoch by this machine's clock, which the daemon and the browser share.
    static func nowMs() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// Replaces the programme the daemon plays ("the TV") with `seconds` of piece `piece` from
    /// `start`, as a new file renamed over the old one: the daemon plays it from its start.
    static func play(piece: Int, from start: Double, seconds: Double, in daemon: DaemonHarness) throws {
        let audio = SyntheticSignature.excerpt(DaemonFixture.shared.audio[piece], start: start, duration: seconds)
        let next = daemon.directory.appendingPathComponent("tv.next.wav").path
        try WAVFile.write(audio, sampleRate: 16_000, to: next)
        guard rename(next, daemon.directory.appendingPathComponent("tv.wav").path) == 0 else { throw HarnessError("rename: \(errno)") }
    }

    /// Cues for `media item`: each id at its start, 3 s long.
    static func setCues(_ cues: [(id: String, start: Double)], on item: String, with client: RpcClient) async throws {
        var set = Earshot_V1_SetCuesRequest()
        set.reference.mediaItemID = item
        set.cues = cues.map { id, start in
            var cue = Earshot_V1_Cue()
            cue.id = id
            cue.cueClass = "com.example.quiz"
            cue.start = start
            cue.duration = 3
            return cue
        }
        _ = try await client.call(Methods.Cues.setCues, set, timeout: .seconds(30))
    }

    @Test func thePageFollowsTheProgrammeItsCuesASeekAndAChannelChange() async throws {
        let daemon = try await DaemonHarness()
        let operatorClient = try daemon.client(.operator)
        defer { operatorClient.close() }
        try await eventually("the box follows the programme", every: .milliseconds(100)) {
            try await operatorClient.call(Methods.Session.getSnapshot, Earshot_V1_GetSnapshotRequest()).currentMatch.mediaItem.id == "piece1"
        }
        // The programme plays piece 1 from 10 s to 50 s, looping: a cue every 8 s starts within 10 s.
        try await Self.setCues([14.0, 22, 30, 38, 46].map { ("q\(Int($0))", $0) }, on: "piece1", with: operatorClient)
        // Piece 2 has cues of the same names, late in it.
        try await Self.setCues([("q14", 47), ("q22", 52)], on: "piece2", with: operatorClient)
        // The cue events as a client of the box's own sees them: kind, cue, position, when published.
        let subscriber = try EventSubscriber(endpoint: daemon.eventsEndpoint, topics: [Topics.cue], security: daemon.security(.viewer))
        let published = Locked<[(kind: Earshot_V1_CueEvent.Kind, cue: String, position: Double, atMs: Int64)]>([])
        let listening = Task.detached {
            for await event in subscriber.events {
                if case .cue(let cue) = event.body { published.withLock { $0.append((cue.kind, cue.cue.id, cue.position, event.tsUnixMs)) } }
            }
        }
        defer {
            listening.cancel()
            subscriber.close()
        }

        let dashboard = try Dashboard(try keys(daemon, .viewer))
        let browser = try await Self.livePage(dashboard.url)
        let first = try await eventually("the page shows the programme", within: .seconds(20), every: .milliseconds(200), {
            Self.rendered(try await browser.html())
        }, until: { $0.contains("class=\"programme-title\"") && $0.contains("data-cue=\"q46\"") && $0.contains("data-catalog=") })
        let shownAtMs = Self.nowMs()
        #expect(Self.attribute("data-connection", ofElementWith: "class=\"fleet-line\"", in: first) == "connected")
        #expect(first.contains("show v"), "the catalog and its version")
        let title = try #require(first.range(of: "class=\"programme-title\">")).upperBound
        #expect(first[title...].hasPrefix("Piece 1"), "\(first[title...].prefix(40))")
        // The catalogs live, with their versions.
        #expect(Self.attribute("data-version", ofElementWith: "data-catalog=\"show\"", in: first) == "1")
        #expect(Self.attribute("data-state", ofElementWith: "data-catalog=\"show\"", in: first) == "active")

        // The cursor moves with the programme, by the time between two looks.
        let clock = ContinuousClock()
        let before = try #require(try await Self.cursor(browser))
        let firstLook = clock.now
        try await Task.sleep(for: .seconds(1.5))
        let after = try #require(try await Self.cursor(browser))
        let took = clock.now - firstLook
        let elapsed = Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18
        // (Unless the programme looped back from 50 s to 10 s in between.)
        #expect(abs((after - before) - elapsed) < 0.6 || after < before, "the cursor moved \(after - before) s in \(elapsed) s")

        // The first cue to start after the page was live turns to started on it within 1 s (the
        // page drew everything it showed at first before `shownAtMs`).
        let start = try await eventually("a cue starts", within: .seconds(20), every: .milliseconds(100), {
            published.withLock { events in events.first { $0.kind == .started && $0.atMs > shownAtMs } }
        }, until: { $0 != nil })!
        let drawn = try await eventually("\(start.cue) turns to started on the page", within: .seconds(5), every: .milliseconds(100), {
            try JSONDecoder().decode([CueChange].self, from: Data(try await browser.evaluateJSON("window.earshotCueChanges").utf8))
                .first { $0.cue == start.cue && $0.status == "started" && $0.atMs >= start.atMs }
        }, until: { $0 != nil })!
        #expect(drawn.atMs - start.atMs <= 1000, "\(start.cue) was drawn started \(drawn.atMs - start.atMs) ms after its STARTED event")
        let shown = Self.rendered(try await browser.html())
        #expect(shown.contains("data-status=\"started\"") && shown.contains("ms late"), "a started cue shows its lateness")
        try await Self.screenshot(browser, name: "following")

        // A seek of 8 s or more, away from where the loop lands (10 s): the cursor follows the
        // box's SEEK within 2 s, and the programme stays.
        let from = try #require(try await Self.cursor(browser))
        let target = from < 30 ? 40.0 : 22.0
        let seekedAtMs = Self.nowMs()
        try Self.play(piece: 1, from: target, seconds: 20, in: daemon)
        let seek = try await eventually("the box reports the seek", within: .seconds(20), every: .milliseconds(100), {
            published.withLock { events in events.first { $0.kind == .seek && $0.atMs >= seekedAtMs && abs($0.position - target) < 6 } }
        }, until: { $0 != nil })!
        let followed = try await eventually("the cursor follows the seek", within: .seconds(5), every: .milliseconds(100), {
            (try await Self.cursor(browser) ?? -1, Self.nowMs())
        }, until: { $0.0 >= seek.position - 1 && $0.0 <= seek.position + 3 })
        #expect(followed.1 - seek.atMs <= 2000, "the cursor reached \(followed.0) s \(followed.1 - seek.atMs) ms after the SEEK to \(seek.position) s")
        #expect(Self.rendered(try await browser.html()).contains("class=\"programme-title\">Piece 1"), "the programme is the same after a seek")

        // A channel change: piece 2, with its own cues drawn where they are, none started.
        try Self.play(piece: 2, from: 10, seconds: 40, in: daemon)
        let changed = try await eventually("the page shows the new channel's programme and its cues", within: .seconds(20),
                                           every: .milliseconds(200), {
            Self.rendered(try await browser.html())
        }, until: { $0.contains("class=\"programme-title\">Piece 2") && $0.contains("data-cue=\"q14\"") })
        #expect(!changed.contains("data-cue=\"q30\""), "the first programme's cues are not drawn on the second")
        #expect(Self.attribute("title", ofElementWith: "data-cue=\"q14\"", in: changed)?.hasPrefix("q14 at 0:47.0: upcoming") == true,
                "\(Self.attribute("title", ofElementWith: "data-cue=\"q14\"", in: changed) ?? "no q14")")
        #expect(Self.attribute("data-status", ofElementWith: "data-cue=\"q22\"", in: changed) == "upcoming")
        let there = try #require(try await Self.cursor(browser))
        #expect(there >= 9 && there <= 40, "the cursor is within the second programme's excerpt: \(there) s")
        try await Self.screenshot(browser, name: "channel-change")
    }

    @Test func aRestartedBoxIsShownReconnectingThenFollowedAgain() async throws {
        let daemon = try await DaemonHarness()
        let dashboard = try Dashboard(try keys(daemon, .viewer))
        let browser = try await Self.livePage(dashboard.url)
        let before = try await eventually("the page follows the box", within: .seconds(20), every: .milliseconds(250), {
            Self.rendered(try await browser.html())
        }, until: { $0.contains("data-connection=\"connected\"") && $0.contains("class=\"programme-title\"") })
        let firstStart = Self.text(after: "(daemon start ", in: before)

        #expect(daemon.stop() == 0)
        let gone = try await eventually("the page says the box is unreachable", within: .seconds(30), every: .milliseconds(250), {
            Self.rendered(try await browser.html())
        }, until: { $0.contains("data-connection=\"reconnecting\"") })
        #expect(gone.contains("unreachable, reconnecting"))
        // What it played stays shown, as last heard, its cursor standing still.
        #expect(gone.contains("data-stale") && gone.contains("class=\"programme-title\">Piece 1"), "\(gone)")
        let stood = try #require(try await Self.cursor(browser))
        try await Task.sleep(for: .seconds(1))
        #expect(try await Self.cursor(browser) == stood, "the cursor of a box not heard stands still")
        try await Self.screenshot(browser, name: "reconnecting")

        // The same box again, on the same ports and state: a new daemon start.
        let again = try await DaemonHarness(reusing: daemon.directory, clientKeys: daemon.clientKeys,
                                            settings: ["--rpc.listen=\(daemon.rpcEndpoint)", "--events.listen=\(daemon.eventsEndpoint)"])
        defer { _ = again.stop() }
        let back = try await eventually("the page follows the restarted box", within: .seconds(30), every: .milliseconds(250), {
            Self.rendered(try await browser.html())
        }, until: { $0.contains("data-connection=\"connected\"") && $0.contains("class=\"programme-title\"") && !$0.contains("data-stale") })
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
