import EarshotCore
import EarshotSync
import EarshotSystem
import FoundationEssentials
import Logging

#if canImport(Glibc)
    import Glibc
#endif

/// What SIGTERM, SIGINT and SIGHUP do at every point of earshotd's life. `main` blocks them
/// before anything else (`ProcessSignals.block`) and calls `takeSignals()` right after, so a
/// signal is never lost, never fatal and never ignored for long:
///
/// - While earshotd reads its configuration and while the daemon starts, SIGTERM and SIGINT
///   ask start-up to stop: `stopRequested` turns true, the start-up steps give up as soon as they
///   notice (catalog verification looks every megabyte) with `stoppedDuringStartUp`, and
///   earshotd exits 0 as after a normal stop. A step that does not return within
///   `startupGrace` (a read that hangs) does not hold the stop up: the process then exits 0 at
///   once. That is safe at any point, like `kill -9`: every file the daemon writes (its key
///   pair) is written to a temporary file and renamed into place, so it is whole or absent, and
///   a temporary file left behind is removed at the next start. SIGHUP is remembered and the
///   allow-list re-read once the daemon is up.
/// - Once the daemon is up, SIGTERM and SIGINT stop it gracefully (`Daemon.stop`) and SIGHUP
///   re-reads the allow-list.
public final class DaemonSignals: Sendable {
    /// The error a start-up that noticed a stop request ends with.
    public static let stoppedDuringStartUp = EarshotError.internalError("stopped during start-up")
    /// How long a start-up asked to stop may take to notice before the process just exits.
    public static let startupGrace: Duration = .seconds(2)

    private enum Phase {
        case configuring
        case starting(Logger)
        case running(Daemon, Logger?)
    }

    private struct State {
        var phase = Phase.configuring
        var stopRequested = false
        var reloadRequested = false
    }

    private let state = Locked(State())

    public init() {}

    /// True once SIGTERM or SIGINT arrived.
    public var stopRequested: Bool { state.withLock { $0.stopRequested } }

    /// Takes the (blocked) signals from now on, on a thread of their own.
    public func takeSignals() throws(NamedThread.StartError) {
        try ProcessSignals.handle([SIGTERM, SIGINT, SIGHUP]) { [self] number in handle(number) }
    }

    /// The configuration is read and logging works: the daemon is being built.
    public func starting(logger: Logger) {
        state.withLock { $0.phase = .starting(logger) }
    }

    /// The daemon is built: from now on signals go to it. A stop or a reload asked for while it
    /// was being built is carried out now.
    public func started(_ daemon: Daemon) {
        let (stop, reload) = state.withLock { s in
            if case .starting(let logger) = s.phase { s.phase = .running(daemon, logger) } else { s.phase = .running(daemon, nil) }
            return (s.stopRequested, s.reloadRequested)
        }
        if reload { daemon.reloadAllowList() }
        if stop { Task.detached { await daemon.stop() } }
    }

    private enum Action {
        case reload(Daemon)
        case stop(Daemon, Logger?)
        case stopStartUp(Logger?, first: Bool)
        case none
    }

    private func handle(_ number: Int32) {
        let action = state.withLock { s -> Action in
            let logger: Logger?
            switch s.phase {
            case .running(let daemon, let logger):
                return number == SIGHUP ? .reload(daemon) : .stop(daemon, logger)
            case .starting(let l): logger = l
            case .configuring: logger = nil
            }
            if number == SIGHUP {
                s.reloadRequested = true
                return .none
            }
            defer { s.stopRequested = true }
            return .stopStartUp(logger, first: !s.stopRequested)
        }
        let name = number == SIGTERM ? "SIGTERM" : "SIGINT"
        switch action {
        case .reload(let daemon):
            daemon.reloadAllowList()
        case .stop(let daemon, let logger):
            Self.say("signal \(name): shutting down", logger)
            Task.detached { await daemon.stop() }
        case .stopStartUp(let logger, let first):
            Self.say("signal \(name): shutting down", logger)
            if first { exitIfStartUpHangs() }
        case .none:
            break
        }
    }

    /// After `startupGrace`, exits 0 if the daemon is still not built.
    private func exitIfStartUpHangs() {
        // If no thread can be made, the stop waits for start-up to notice it.
        _ = try? NamedThread(name: "earshot-stop-watch", stackSize: 1 << 18) { [self] in
            sleep(UInt32(Self.startupGrace.components.seconds))
            let logger = state.withLock { s -> Logger?? in
                switch s.phase {
                case .running: return .none
                case .starting(let l): return .some(l)
                case .configuring: return .some(nil)
                }
            }
            guard let logger else { return }
            Self.say("start-up did not stop within \(Self.startupGrace.components.seconds) s of the signal; exiting now", logger)
            fflush(nil)
            _exit(0)
        }
    }

    private static func say(_ message: String, _ logger: Logger?) {
        if let logger {
            logger.notice("\(message)")
        } else {
            var text = "earshotd: \(message)\n"
            text.withUTF8 { _ = Descriptor.writeAll(STDERR_FILENO, UnsafeRawBufferPointer($0)) }
        }
    }
}
