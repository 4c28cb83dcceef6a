import EarshotSync
import EarshotSystem
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Keeps third-party decoders' diagnostics off the user's terminal and out of the daemon's log.
///
/// libmpg123, which libsndfile uses for MP3, prints notes about damaged or foreign data straight
/// to stderr ("Note: Illegal Audio-MPEG-Header …", "Trying to resync…") and neither it nor
/// libsndfile offers a way to turn that off. Earshot reports every problem itself, in one line,
/// so libsndfile calls run inside `silenced`: meanwhile file descriptor 2 points at /dev/null.
///
/// fd 2 belongs to the whole process, hence: nothing is silenced until a program whose own
/// messages all go through `write(_:)` (the CLI) calls `enable()` — the daemon never does, so its
/// log, written by other threads, cannot be lost while a file is decoded. Once enabled, the
/// redirection is counted (decoders on several threads share it; the last one out restores
/// stderr), and `write(_:)` writes to a duplicate of the real stderr, so the program's messages
/// are never silenced whatever another thread is decoding.
public enum StandardErrorSilencer {
    private struct State {
        /// A duplicate of the process's stderr, made on first use (-1: stderr was closed).
        var original: Int32 = -2
        var sink: Int32 = -1
        var depth = 0

        mutating func setUp() {
            guard original == -2 else { return }
            original = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3)
            sink = open("/dev/null", O_WRONLY | O_CLOEXEC)
        }
    }

    private static let state = Locked(State())
    /// Read without the lock: a program that never enables it (the daemon) pays one load per call.
    private static let enabled = Atomic<Bool>(false)

    /// Silences decoders from now on, for a program that writes its own messages with `write(_:)`.
    public static func enable() {
        enabled.store(true, ordering: .releasing)
    }

    /// Runs `body` with stderr silenced.
    /// The corresponding C functions are `dup2` and `fcntl(F_DUPFD_CLOEXEC)`.
    public static func silenced<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        guard enabled.load(ordering: .acquiring) else { return try body() }
        let silencing = state.withLock { s -> Bool in
            s.setUp()
            guard s.original >= 0, s.sink >= 0 else { return false }
            if s.depth == 0 { _ = dup2(s.sink, STDERR_FILENO) }
            s.depth += 1
            return true
        }
        defer {
            if silencing {
                state.withLock { s in
                    s.depth -= 1
                    if s.depth == 0 { _ = dup2(s.original, STDERR_FILENO) }
                }
            }
        }
        return try body()
    }

    /// Writes `text` to the process's real stderr, even while a decoder runs silenced.
    public static func write(_ text: String) {
        let fd = state.withLock { s -> Int32 in
            s.setUp()
            return s.original >= 0 ? s.original : STDERR_FILENO
        }
        _ = Array(text.utf8).withUnsafeBytes { Descriptor.writeAll(fd, $0) }
    }
}
