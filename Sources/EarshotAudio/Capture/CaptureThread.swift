import CALSA
import EarshotCore

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

/// One dedicated POSIX thread with a name and, if allowed, realtime priority.
///
/// A pthread rather than a task or a Dispatch queue: the capture loop blocks in `poll` for its
/// whole life and wants its own scheduling policy, neither of which suits a shared pool. The
/// name ("earshot-capture") shows in `top -H`, `ps -L` and debuggers.
final class CaptureThread {
    private var thread = pthread_t()
    private var joined = false

    /// Starts `body` on a new thread called `name` (at most 15 bytes), first trying `SCHED_FIFO`
    /// at `realtimePriority` if given. `body` receives the outcome of that attempt; the thread
    /// never reports it itself.
    ///
    /// Throws `internalError` if the thread cannot be created.
    init(name: String, realtimePriority: Int32?, body: @escaping @Sendable (RealtimeScheduling) -> Void) throws(EarshotError) {
        let start = ThreadStart(name: name, realtimePriority: realtimePriority, body: body)
        let context = Unmanaged.passRetained(start).toOpaque()
        let status = pthread_create(&thread, nil, { context in
            let start = Unmanaged<ThreadStart>.fromOpaque(context!).takeRetainedValue()
            start.run()
            return nil
        }, context)
        guard status == 0 else {
            Unmanaged<ThreadStart>.fromOpaque(context).release()
            throw .internalError("cannot create the \(name) thread: \(String(cString: strerror(status)))")
        }
    }

    /// Waits for the thread to end. Call once, after making its body return.
    func join() {
        guard !joined else { return }
        joined = true
        pthread_join(thread, nil)
    }

    deinit {
        if !joined { pthread_detach(thread) }
    }
}

/// What the new thread needs, handed over through pthread's context pointer.
private final class ThreadStart {
    let name: String
    let realtimePriority: Int32?
    let body: @Sendable (RealtimeScheduling) -> Void

    init(name: String, realtimePriority: Int32?, body: @escaping @Sendable (RealtimeScheduling) -> Void) {
        self.name = name
        self.realtimePriority = realtimePriority
        self.body = body
    }

    func run() {
        let me = pthread_self()
        _ = pthread_setname_np(me, String(name.utf8.prefix(15))!)
        var scheduling = RealtimeScheduling.notRequested
        if let priority = realtimePriority {
            var parameters = sched_param()
            parameters.sched_priority = priority
            let status = pthread_setschedparam(me, SCHED_FIFO, &parameters)
            scheduling = status == 0 ? .granted(priority: priority) : .denied(String(cString: strerror(status)))
        }
        body(scheduling)
    }
}
