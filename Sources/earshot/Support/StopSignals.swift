import Dispatch

#if canImport(Glibc)
    import Glibc
#endif

/// SIGINT (Ctrl-C) and SIGTERM (kill, systemd, a supervisor) end a long-running command the
/// same way, through `handler`, rather than killing the process with its output half written.
/// `restore()` gives both their default action back: a second signal while the command winds
/// down ends the process at once. (Unchecked: the sources are only set in `init`, and
/// cancelling one is thread-safe.)
final class StopSignals: @unchecked Sendable {
    private let sources: [any DispatchSourceSignal]

    init(queue: DispatchQueue = .global(), _ handler: @escaping @Sendable (Int32) -> Void) {
        sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { handler(number) }
            source.resume()
            return source
        }
    }

    func restore() {
        for source in sources { source.cancel() }
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }
}
