import EarshotCore
import EarshotSync

#if canImport(Glibc)
    import Glibc
#endif

/// How the capture thread is scheduled, for the owner to log once.
public enum RealtimeScheduling: Equatable, Sendable, CustomStringConvertible {
    /// Realtime scheduling was not asked for.
    case notRequested
    /// The thread runs under `SCHED_FIFO` at this priority.
    case granted(priority: Int32)
    /// `SCHED_FIFO` was refused (typically `EPERM`: no `CAP_SYS_NICE` or `RLIMIT_RTPRIO`); the
    /// thread runs at normal priority. The text says why.
    case denied(String)

    public var description: String {
        switch self {
        case .notRequested: "normal scheduling (realtime not requested)"
        case .granted(let priority): "SCHED_FIFO priority \(priority)"
        case .denied(let reason): "normal scheduling (SCHED_FIFO refused: \(reason))"
        }
    }
}

/// The capture thread: a `NamedThread` that first asks for `SCHED_FIFO`, since the capture loop
/// blocks in `poll` for its whole life and wants its own scheduling policy, neither of which
/// suits a shared pool.
enum CaptureThread {
    /// Starts `body` on a new thread called `name` (at most 15 bytes), first trying `SCHED_FIFO`
    /// at `realtimePriority` if given. `body` receives the outcome of that attempt; the thread
    /// never reports it itself.
    ///
    /// Throws `internalError` if the thread cannot be created.
    static func start(name: String, realtimePriority: Int32?, body: @escaping @Sendable (RealtimeScheduling) -> Void) throws(EarshotError) -> NamedThread {
        do {
            return try NamedThread(name: name) {
                var scheduling = RealtimeScheduling.notRequested
                if let priority = realtimePriority {
                    var parameters = sched_param()
                    parameters.sched_priority = priority
                    let status = pthread_setschedparam(pthread_self(), SCHED_FIFO, &parameters)
                    scheduling = status == 0 ? .granted(priority: priority) : .denied(String(cString: strerror(status)))
                }
                body(scheduling)
            }
        } catch {
            throw .internalError(error.description)
        }
    }
}
