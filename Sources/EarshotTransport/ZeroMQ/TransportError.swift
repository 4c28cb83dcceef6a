import CZMQ

/// A ZeroMQ call that failed: what was being done, on which endpoint, and libzmq's own words.
public struct TransportError: Error, Sendable, Equatable, CustomStringConvertible {
    /// "bind", "connect", "set ZMQ_LINGER", "create a ROUTER socket"…
    public var operation: String
    /// The endpoint involved, when there is one.
    public var endpoint: String?
    /// The `errno` value libzmq reported.
    public var code: Int32
    /// `zmq_strerror(code)`.
    public var message: String

    public init(operation: String, endpoint: String? = nil, code: Int32, message: String? = nil) {
        self.operation = operation
        self.endpoint = endpoint
        self.code = code
        self.message = message ?? String(cString: zmq_strerror(code))
    }

    /// The error of the libzmq call that just failed on this thread.
    static func last(_ operation: String, endpoint: String? = nil) -> TransportError {
        TransportError(operation: operation, endpoint: endpoint, code: zmq_errno())
    }

    public var description: String {
        if let endpoint { "cannot \(operation) \(endpoint): \(message)" } else { "cannot \(operation): \(message)" }
    }
}
