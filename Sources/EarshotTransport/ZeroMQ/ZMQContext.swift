import CZMQ

/// The process's one ZeroMQ context.
///
/// A context owns libzmq's own I/O thread and is thread-safe; sockets are not. One context for the
/// whole process is what libzmq recommends, and `inproc://` endpoints (the ZAP handler, socket
/// monitors) only connect sockets of the same context. It is never terminated: `zmq_ctx_term`
/// waits for every socket to close, and a process that exits does not need it.
final class ZMQContext: @unchecked Sendable {
    let handle: UnsafeMutableRawPointer

    private init(handle: UnsafeMutableRawPointer) {
        self.handle = handle
    }

    private static let created: Result<ZMQContext, TransportError> = {
        guard let handle = zmq_ctx_new() else { return .failure(.last("create a ZeroMQ context")) }
        return .success(ZMQContext(handle: handle))
    }()

    /// The shared context, created on first use.
    static func shared() throws(TransportError) -> ZMQContext {
        try created.get()
    }
}
