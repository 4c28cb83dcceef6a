import ArgumentParser
import Dispatch
import EarshotCore
import EarshotService
import Logging

#if canImport(Glibc)
    import Glibc
#endif

// earshotd: reads its configuration, starts the daemon, stops it gracefully on SIGTERM/SIGINT.
// Everything it does is in EarshotService; this file only parses arguments and wires signals.

// Before anything else (no thread exists yet): SIGTERM, SIGINT and SIGHUP are blocked in every
// thread and taken by one that waits for them, so a signal is never fatal or lost, and a stop
// sent at any point of start-up is honoured at once (see DaemonSignals).
ProcessSignals.block([SIGTERM, SIGINT, SIGHUP])
signal(SIGPIPE, SIG_IGN)
let signals = DaemonSignals()
do {
    try signals.takeSignals()
} catch {
    fail("\(error)", status: 1)
}

/// earshotd's command line. Parsing only: the daemon is started below.
struct EarshotdCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "earshotd",
        abstract: "The Earshot recognition daemon.",
        usage: "earshotd [--config FILE] [--section.key=value ...] [--check-config]",
        discussion: """
            Listens to an ALSA device (or plays a file in real time), keeps a prerecording window \
            fingerprinted, answers RPC over ZeroMQ and publishes events. Runs until SIGTERM or \
            SIGINT; SIGHUP re-reads the allow-list. Logs go to standard output.

            Configuration: the TOML file given with --config, else \(DaemonConfiguration.defaultPath) \
            when it exists, else the built-in defaults. deploy/earshotd.toml lists every key, \
            commented, with its default. Any key can also be set on the command line as \
            --section.key=value, which wins over the file; the value is read as TOML when it \
            parses, else as plain text:

              earshotd --config /etc/earshot/earshotd.toml --audio.device=plughw:1,0
              earshotd --rpc.listen='["tcp://0.0.0.0:7400"]' --session.follow=false
              earshotd --audio.source=file --audio.file=tv.wav --daemon.log_level=debug
              earshotd --config my.toml --session.catalog=show --check-config

            Exit status:
              0  a clean stop (SIGTERM or SIGINT), or --check-config, --help, --version
              1  the daemon cannot start (no usable catalog, a port in use…)
              2  a bad command line or configuration
            """,
        version: "earshotd \(EarshotVersion.string)")

    @Option(name: .long, parsing: .unconditional,
            help: ArgumentHelp("The configuration (TOML); default \(DaemonConfiguration.defaultPath) when it exists.",
                               valueName: "file"))
    var config: String?

    @Flag(name: .customLong("check-config"), help: "Print the effective configuration and exit.")
    var checkConfig = false

    @Argument(parsing: .allUnrecognized,
              help: ArgumentHelp("Override one key of the configuration, e.g. --audio.device=plughw:1,0.",
                                 valueName: "--section.key=value"))
    var settings: [String] = []

    /// The `--section.key=value` overrides, in order (`validate` made sure every setting is one).
    var overrides: [(key: String, value: TOMLSubset.Value)] {
        settings.compactMap { DaemonConfiguration.override(fromArgument: $0) }
    }

    func validate() throws {
        if let bad = settings.first(where: { DaemonConfiguration.override(fromArgument: $0) == nil }) {
            throw ValidationError("unknown argument \(bad) (a setting is --section.key=value, e.g. --audio.device=plughw:1,0)")
        }
    }
}

func fail(_ message: String, status: Int32) -> Never {
    var text = "earshotd: \(message)\n"
    text.withUTF8 { _ = write(STDERR_FILENO, $0.baseAddress, $0.count) }
    exit(status)
}

let command: EarshotdCommand
do {
    command = try EarshotdCommand.parse()
} catch {
    if EarshotdCommand.exitCode(for: error) == .success {
        print(EarshotdCommand.fullMessage(for: error))  // --help, --version
        exit(0)
    }
    var text = EarshotdCommand.fullMessage(for: error)
    if text.hasPrefix("Error: ") { text = String(text.dropFirst("Error: ".count)) }
    fail(text, status: 2)
}

let configuration: DaemonConfiguration
let origin: String
do throws(DaemonConfiguration.Problem) {
    (configuration, origin) = try DaemonConfiguration.load(path: command.config, overrides: command.overrides)
} catch {
    fail(error.message, status: 2)
}
if command.checkConfig {
    print(configuration.rendered(origin: origin))
    exit(0)
}

let level = Logger.Level(rawValue: configuration.logLevel) ?? .info
LoggingSystem.bootstrap { label in
    var handler = EscapingLogHandler(StreamLogHandler.standardOutput(label: label))
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
