import EarshotService
import EarshotTestSupport
import Foundation
import Testing

struct ConfigurationTests {
    /// deploy/earshotd.toml lists every key, commented out, with its default: uncommenting them
    /// all must give exactly the built-in defaults, and every key must be there.
    @Test func deployedFileListsEveryKeyWithItsDefault() throws {
        let text = try String(contentsOf: Repository.root.appendingPathComponent("deploy/earshotd.toml"), encoding: .utf8)
        let uncommented = text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            let l = String(line)
            if l.hasPrefix("#"), l.dropFirst().first?.isLetter == true, l.contains(" = ") { return String(l.dropFirst()) }
            return l
        }.joined(separator: "\n")
        let entries = try TOMLSubset.parse(uncommented)
        #expect(entries.map(\.key) == DaemonConfiguration.keys)
        #expect(try DaemonConfiguration.load(text: uncommented, origin: "deploy") == DaemonConfiguration())
        // As shipped (all commented) it is the defaults too.
        #expect(try DaemonConfiguration.load(text: text, origin: "deploy") == DaemonConfiguration())
    }

    @Test func renderedConfigurationReadsBack() throws {
        var c = DaemonConfiguration()
        c.device = "plughw:1,0"
        c.rpcListen = ["tcp://0.0.0.0:7400", "ipc:///run/earshot/rpc"]
        c.bufferSeconds = 2.5
        c.follow = false
        #expect(try DaemonConfiguration.load(text: c.rendered(origin: "test"), origin: "x") == c)
    }

    @Test func overridesWinOverTheFile() throws {
        let c = try DaemonConfiguration.load(
            text: "[audio]\ndevice = \"hw:0,0\"\n", origin: "f.toml",
            overrides: [("audio.device", TOMLSubset.parseValue("plughw:2,0")), ("session.follow", TOMLSubset.parseValue("false")),
                        ("rpc.listen", TOMLSubset.parseValue("[\"tcp://127.0.0.1:9000\"]"))])
        #expect(c.device == "plughw:2,0")
        #expect(c.follow == false)
        #expect(c.rpcListen == ["tcp://127.0.0.1:9000"])
    }

    /// earshotd's `--section.key=value` arguments: TOML values when they parse, raw text otherwise.
    @Test func commandLineOverrides() throws {
        func parsed(_ argument: String) -> TOMLSubset.Value? { DaemonConfiguration.override(fromArgument: argument)?.value }
        let device = try #require(DaemonConfiguration.override(fromArgument: "--audio.device=plughw:1,0"))
        #expect(device.key == "audio.device")
        #expect(parsed("--audio.device=plughw:1,0") == .string("plughw:1,0"))
        #expect(parsed("--session.follow=false") == .boolean(false))
        #expect(parsed("--audio.sample_rate=48000") == .integer(48000))
        #expect(parsed("--audio.buffer_seconds=2.5") == .float(2.5))
        #expect(parsed("--rpc.listen=[\"tcp://0.0.0.0:7400\"]") == .array([.string("tcp://0.0.0.0:7400")]))
        #expect(parsed("--audio.file=/tmp/a b=c.wav") == .string("/tmp/a b=c.wav"), "the first '=' ends the key")
        #expect(parsed("--audio.device=\"hw:0\"") == .string("hw:0"), "a quoted TOML string loses its quotes")
        #expect(parsed("--audio.device=") == .string(""))
        #expect(DaemonConfiguration.override(fromArgument: "--audio.file=a=b")?.key == "audio.file")
        // Not overrides: no "--", no "=", no section.
        for argument in ["audio.device=x", "-audio.device=x", "--audio.device", "--device=x", "--config", "--check-config", "x"] {
            #expect(DaemonConfiguration.override(fromArgument: argument) == nil, "\(argument)")
        }
        let c = try DaemonConfiguration.load(text: "", origin: "none",
                                             overrides: ["--audio.device=plughw:1,0", "--rpc.max_in_flight=9"].compactMap(DaemonConfiguration.override))
        #expect(c.device == "plughw:1,0")
        #expect(c.maximumInFlight == 9)
    }

    /// `--config FILE`, else the default file when it exists, else the built-in defaults.
    @Test func whereTheConfigurationComesFrom() throws {
        let scratch = try TemporaryDirectory("earshot-config")
        let directory = scratch.url
        let file = directory.appendingPathComponent("given.toml").path
        let fallback = directory.appendingPathComponent("default.toml").path
        let missing = directory.appendingPathComponent("missing.toml").path
        try "[audio]\ndevice = \"hw:1,0\"\n".write(toFile: file, atomically: true, encoding: .utf8)
        try "[audio]\ndevice = \"hw:2,0\"\n".write(toFile: fallback, atomically: true, encoding: .utf8)

        let given = try DaemonConfiguration.load(path: file, defaultPath: fallback, overrides: [])
        #expect(given.origin == file)
        #expect(given.configuration.device == "hw:1,0")

        let byDefault = try DaemonConfiguration.load(path: nil, defaultPath: fallback, overrides: [("session.follow", .boolean(false))])
        #expect(byDefault.origin == fallback)
        #expect(byDefault.configuration.device == "hw:2,0")
        #expect(byDefault.configuration.follow == false)

        let builtIn = try DaemonConfiguration.load(path: nil, defaultPath: missing, overrides: [])
        #expect(builtIn.origin == "built-in defaults")
        #expect(builtIn.configuration == DaemonConfiguration())

        do {
            _ = try DaemonConfiguration.load(path: missing, defaultPath: fallback, overrides: [])
            Issue.record("a missing --config file was accepted")
        } catch {
            #expect(error.message == "\(missing): cannot read the configuration file")
        }
        #expect(DaemonConfiguration.defaultPath == "/etc/earshot/earshotd.toml")
    }

    /// A FIFO named as the configuration (or sitting at the default path) is refused without
    /// being opened: reading it would wait for a writer and hang the start.
    @Test func aFIFOIsNeverReadAsTheConfiguration() throws {
        let scratch = try TemporaryDirectory("earshot-config")
        let fifo = scratch.path("cfg.toml")
        #expect(mkfifo(fifo, 0o644) == 0)
        let started = ContinuousClock.now
        do {
            _ = try DaemonConfiguration.load(path: fifo, overrides: [])
            Issue.record("a FIFO was read as the configuration")
        } catch {
            #expect(error.message == "\(fifo): cannot read the configuration file")
        }
        let fallback = try DaemonConfiguration.load(path: nil, defaultPath: fifo, overrides: [])
        #expect(fallback.origin == "built-in defaults")
        #expect(ContinuousClock.now - started < .seconds(2), "reading a FIFO blocked")
    }

    @Test(arguments: [
        ("[audio]\ndevise = \"x\"\n", "f.toml: unknown setting audio.devise; [audio] has source, device"),
        ("[audio]\nsample_rate = \"fast\"\n", "f.toml: audio.sample_rate must be a whole number"),
        ("[audio]\nsample_rate = 4000\n", "f.toml: audio.sample_rate must be within 8000…96000"),
        ("[audio]\nsource = \"file\"\n", "audio.source = \"file\" needs audio.file"),
        ("[daemon]\nlog_level = \"loud\"\n", "daemon.log_level must be one of"),
        ("[rpc]\nlisten = [\"a\", 3]\n", "f.toml: rpc.listen must be a list of strings"),
        ("[rpc\n", "f.toml: line 1: expected ']'"),
        ("[session]\nfollow = yes\n", "f.toml: line 2: 'yes' is not a value"),
        ("[session]\nfollow = true\nfollow = false\n", "f.toml: line 3: session.follow is set twice"),
        ("[audio]\ndevice = \"unterminated\n", "f.toml: line 2: unterminated string"),
        ("[audio]\nfile = \"/tmp/tv.wav\u{0}/etc/passwd\"\n", "f.toml: line 2: control character 0x0 in a string"),
        ("[audio]\ndevice = 'hw:0\u{1B}'\n", "f.toml: line 2: control character 0x1b in a string"),
    ])
    func badConfigurationSaysWhatAndWhere(text: String, expected: String) {
        do {
            _ = try DaemonConfiguration.load(text: text, origin: "f.toml")
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.message.hasPrefix(expected) || error.message.contains(expected), "\(error.message)")
        }
    }

    /// The library's reading connections: 2 unless set, 1 to 16.
    @Test func libraryReadConnections() throws {
        #expect(DaemonConfiguration().libraryReadConnections == 2)
        #expect(try DaemonConfiguration.load(text: "[library]\nread_connections = 4\n", origin: "f").libraryReadConnections == 4)
        for wrong in ["0", "17", "\"2\""] {
            #expect(throws: DaemonConfiguration.Problem.self, "read_connections = \(wrong)") {
                try DaemonConfiguration.load(text: "[library]\nread_connections = \(wrong)\n", origin: "f")
            }
        }
    }

    @Test func valuesOfEveryKind() throws {
        let entries = try TOMLSubset.parse("""
            # comment
            top = 1
            [a.b]
            s = "x\\"y\\n"   # trailing comment
            l = 'C:\\raw'
            i = -42
            f = 2.5
            big = 1_000
            t = true
            arr = [1, "two", false]
            """)
        #expect(entries.map(\.key) == ["top", "a.b.s", "a.b.l", "a.b.i", "a.b.f", "a.b.big", "a.b.t", "a.b.arr"])
        #expect(entries[1].value == .string("x\"y\n"))
        #expect(entries[2].value == .string("C:\\raw"))
        #expect(entries[3].value == .integer(-42))
        #expect(entries[4].value == .float(2.5))
        #expect(entries[5].value == .integer(1000))
        #expect(entries[7].value == .array([.integer(1), .string("two"), .boolean(false)]))
    }
}
