import CZMQ
import EarshotSync

#if canImport(Glibc)
    import Glibc
#endif

/// A named POSIX thread running one closure.
///
/// A pthread rather than a task: the loop blocks in `zmq_poll` for its whole life, which would
/// take a thread away from Swift's small cooperative pool. The name shows in `top -H` and `ps -L`.
final class IOThread: @unchecked Sendable {
    private let thread: pthread_t
    private let joined = OnceFlag()

    init(name: String, body: @escaping @Sendable () -> Void) throws(TransportError) {
        let box = Unmanaged.passRetained(ThreadBody(name: name, body: body)).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(&thread, nil, { context in
            let body = Unmanaged<ThreadBody>.fromOpaque(context!).takeRetainedValue()
            _ = pthread_setname_np(pthread_self(), String(body.name.utf8.prefix(15))!)
            body.body()
            return nil
        }, box)
        guard status == 0 else {
            Unmanaged<ThreadBody>.fromOpaque(box).release()
            throw TransportError(operation: "start the \(name) thread", code: status)
        }
        self.thread = thread
    }

    /// Whether the caller is this thread.
    var isCurrent: Bool { pthread_equal(thread, pthread_self()) != 0 }

    /// Waits for the body to return (once; later calls return at once). Must not be called
    /// from the thread itself.
    func join() {
        if joined.claim() { pthread_join(thread, nil) }
    }

    /// Lets the thread end on its own without being joined.
    func detach() {
        if joined.claim() { pthread_detach(thread) }
    }
}

private final class ThreadBody {
    let name: String
    let body: @Sendable () -> Void

    init(name: String, body: @escaping @Sendable () -> Void) {
        self.name = name
        self.body = body
    }
}
