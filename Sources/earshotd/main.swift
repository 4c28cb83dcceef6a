import Dispatch
import EarshotCore
import EarshotService
import Foundation
import Logging

// earshotd: reads its configuration, starts the daemon, stops it gracefully on SIGTERM/SIGINT.
// Everything it does is in EarshotService; this file only parses arguments and wires signals.

let usage = """
    usage: earshotd [--config FILE] [--section.key=value ...]

    The Earshot recognition daemon: listens to an ALSA device (or plays a file in real time),
    keeps a prerecording window fingerprinted, answers RPC over ZeroMQ and publishes events.

      --config FILE        configuration (TOML); default /etc/earshot/earshotd.toml when it
                           exists, else built-in defaults. deploy/earshotd.toml lists every key.
      --section.key=VALUE  override one key, e.g. --audio.device=plughw:1,0
                           --rpc.listen='["tcp://0.0.0.0:7400"]' --session.follow=false
      --check-config       print the effective configuration and exit
      --help, --version

    Exit status: 0 after a clean stop, 2 for a bad command line or configuration, 1 when the
    daemon cannot start (no usable catalog, a port in use…). Logs go to standard output.
    """

// Before anything else (no thread exists yet): SIGTERM, SIGINT and SIGHUP are blocked in every
// thread and taken by one that waits for them, so a signal is never fatal or lost, and a stop
// sent at any point of start-up is honoured at once (see DaemonSignals).
ProcessSignals.block([SIGTERM, SIGINT, SIGHUP])
signal(SIGPIPE, SIG_IGN)
let signals = DaemonSignals()
signals.takeSignals()

func fail(_ message: String, status: Int32) -> Never {
    FileHandle.standardError.write(Data("earshotd: \(message)\n".utf8))
    exit(status)
}

var configPath: String?
var overrides: [(key: String, value: TOMLSubset.Value)] = []
var checkOnly = false
var arguments = CommandLine.arguments.dropFirst()[...]
while let arg = arguments.popFirst() {
    switch arg {
    case "--help", "-h":
        print(usage)
        exit(0)
    case "--version":
        print("earshotd \(EarshotVersion.string)")
        exit(0)
    case "--check-config":
        checkOnly = true
    case "--config":
        guard let p = arguments.popFirst() else { fail("--config needs a file", status: 2) }
        configPath = p
    default:
        if arg.hasPrefix("--config=") {
            configPath = String(arg.dropFirst("--config=".count))
        } else if arg.hasPrefix("--"), let eq = arg.firstIndex(of: "="), arg[arg.index(arg.startIndex, offsetBy: 2)..<eq].contains(".") {
            let key = String(arg[arg.index(arg.startIndex, offsetBy: 2)..<eq])
            overrides.append((key, TOMLSubset.parseValue(String(arg[arg.index(after: eq)...]))))
        } else {
            fail("unknown argument \(arg)\n\n\(usage)", status: 2)
        }
    }
}

let defaultPath = "/etc/earshot/earshotd.toml"
var text = ""
var origin = "built-in defaults"
if let configPath {
    guard let t = try? String(contentsOfFile: configPath, encoding: .utf8) else {
        fail("\(configPath): cannot read the configuration file", status: 2)
    }
    (text, origin) = (t, configPath)
} else if let t = try? String(contentsOfFile: defaultPath, encoding: .utf8) {
    (text, origin) = (t, defaultPath)
}
let configuration: DaemonConfiguration
do {
    configuration = try DaemonConfiguration.load(text: text, origin: origin, overrides: overrides)
} catch {
    fail(error.message, status: 2)
}
if checkOnly {
    print(configuration.rendered(origin: origin))
    exit(0)
}

let level = Logger.Level(rawValue: configuration.logLevel) ?? .info
LoggingSystem.bootstrap { label in
    var handler = StreamLogHandler.standardOutput(label: label)
    handler.logLevel = level
    return handler
}
let logger = Logger(label: "earshotd")
logger.info("earshotd \(EarshotVersion.string) starting with \(origin)")

signals.starting(logger: logger)

let daemon: Daemon
do throws(EarshotError) {
    if signals.stopRequested { throw DaemonSignals.stoppedDuringStartUp }
    daemon = try Daemon(configuration: configuration, logger: logger, stopRequested: { signals.stopRequested })
} catch let error where error == DaemonSignals.stoppedDuringStartUp {
    logger.notice("stopped during start-up")
    exit(0)
} catch {
    logger.critical("cannot start: \(error.message)")
    fail(error.message, status: 1)
}
signals.started(daemon)

let done = DispatchSemaphore(value: 0)
Task.detached { @Sendable in
    await daemon.run()
    logger.notice("stopped")
    done.signal()
}
done.wait()
exit(0)
