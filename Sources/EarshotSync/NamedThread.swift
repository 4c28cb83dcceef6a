import CPthread

#if canImport(Glibc)
    import Glibc
#endif

/// A named POSIX thread running one closure: Earshot's only way to start a thread.
///
/// A pthread rather than a task: its users block for their whole life (`zmq_poll`, `poll` on a
/// sound card, `sigwait`, a session's command queue), which would take a thread away from
/// Swift's small cooperative pool. The name (at most 15 bytes) shows in `top -H` and `ps -L`.
/// Dropping the object without `join` detaches the thread: it runs on and frees itself.
public final class NamedThread: @unchecked Sendable {
    /// `pthread_create` failed (`code` is its errno value).
    public struct StartError: Error, CustomStringConvertible {
        public let name: String
        public let code: Int32
        public var description: String { "cannot start the \(name) thread: \(String(cString: strerror(code)))" }
    }

    private let thread: pthread_t
    private let settled = OnceFlag()

    /// Starts `body` on a new thread called `name`, with `stackSize` bytes of stack (the
    /// system's default, usually 8 MiB of address space, when nil).
    public init(name: String, stackSize: Int? = nil, body: @escaping @Sendable () -> Void) throws(StartError) {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        if let stackSize { pthread_attr_setstacksize(&attributes, max(stackSize, Int(PTHREAD_STACK_MIN))) }
        let context = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(&thread, &attributes, { context in
            let start = Unmanaged<Start>.fromOpaque(context!).takeRetainedValue()
            _ = pthread_setname_np(pthread_self(), String(start.name.utf8.prefix(15))!)
            start.body()
            return nil
        }, context)
        guard status == 0 else {
            Unmanaged<Start>.fromOpaque(context).release()
            throw StartError(name: name, code: status)
        }
        self.thread = thread
    }

    /// Whether the caller is this thread.
    public var isCurrent: Bool { pthread_equal(thread, pthread_self()) != 0 }

    /// Waits for the body to return (once; later calls return at once). Must not be called
    /// from the thread itself.
    public func join() {
        if settled.claim() { pthread_join(thread, nil) }
    }

    /// Lets the thread end on its own without being joined.
    public func detach() {
        if settled.claim() { pthread_detach(thread) }
    }

    deinit {
        detach()
    }
}

/// What the new thread needs, handed over through pthread's context pointer.
private final class Start {
    let name: String
    let body: @Sendable () -> Void

    init(name: String, body: @escaping @Sendable () -> Void) {
        self.name = name
        self.body = body
    }
}
