import CZMQ
import EarshotSystem

/// One ZeroMQ socket.
///
/// libzmq sockets are not thread-safe: a socket is used by one thread at a time and may move
/// to another only across a full memory barrier. Earshot creates and binds a socket on the
/// caller's thread, then hands it to the loop thread through the loop's locked queue (the
/// barrier) and touches it nowhere else; hence `@unchecked Sendable`.
final class ZMQSocket: @unchecked Sendable {
    enum Kind: CustomStringConvertible {
        case pair, pub, sub, rep, dealer, router, xpub

        /// libzmq's constant for the kind.
        var zmqType: Int32 {
            switch self {
            case .pair: ZMQ_PAIR
            case .pub: ZMQ_PUB
            case .sub: ZMQ_SUB
            case .rep: ZMQ_REP
            case .dealer: ZMQ_DEALER
            case .router: ZMQ_ROUTER
            case .xpub: ZMQ_XPUB
            }
        }

        var description: String {
            switch self {
            case .pair: "PAIR"
            case .pub: "PUB"
            case .sub: "SUB"
            case .rep: "REP"
            case .dealer: "DEALER"
            case .router: "ROUTER"
            case .xpub: "XPUB"
            }
        }
    }

    let kind: Kind
    private(set) var handle: UnsafeMutableRawPointer?
    /// `monitor` was called and `stopMonitoring` not yet.
    private var isMonitored = false
    /// Reused for every frame received, so receiving allocates only the frame's bytes.
    let frame: UnsafeMutablePointer<zmq_msg_t>

    init(_ kind: Kind) throws(TransportError) {
        let context = try ZMQContext.shared()
        guard let handle = zmq_socket(context.handle, kind.zmqType) else {
            throw .last("create a \(kind) socket")
        }
        self.kind = kind
        self.handle = handle
        frame = .allocate(capacity: 1)
    }

    deinit {
        close()
        frame.deallocate()
    }

    /// Closes the socket (ending its monitor first); later calls fail with ENOTSOCK. Safe to
    /// call twice.
    func close() {
        guard let handle else { return }
        stopMonitoring()
        zmq_close(handle)
        self.handle = nil
    }

    var isClosed: Bool { handle == nil }

    func set(_ option: ZMQSocketOption<Int32>, _ value: Int32) throws(TransportError) {
        var v = value
        try setRaw(option.name, option.label, &v, MemoryLayout<Int32>.size)
    }

    func set(_ option: ZMQSocketOption<Int64>, _ value: Int64) throws(TransportError) {
        var v = value
        try setRaw(option.name, option.label, &v, MemoryLayout<Int64>.size)
    }

    func set(_ option: ZMQSocketOption<Bool>, _ value: Bool) throws(TransportError) {
        var v: Int32 = value ? 1 : 0
        try setRaw(option.name, option.label, &v, MemoryLayout<Int32>.size)
    }

    func set(_ option: ZMQSocketOption<[UInt8]>, _ value: [UInt8]) throws(TransportError) {
        let status = value.withUnsafeBytes { zmq_setsockopt(handle, option.name, $0.baseAddress, $0.count) }
        if status != 0 { throw .last("set \(option.label)") }
    }

    private func setRaw(_ name: Int32, _ label: String, _ value: UnsafeRawPointer, _ size: Int) throws(TransportError) {
        if zmq_setsockopt(handle, name, value, size) != 0 { throw .last("set \(label)") }
    }

    func get(_ option: ZMQSocketOption<Int32>) throws(TransportError) -> Int32 {
        var value: Int32 = 0
        var size = MemoryLayout<Int32>.size
        if zmq_getsockopt(handle, option.name, &value, &size) != 0 { throw .last("get \(option.label)") }
        return value
    }

    /// libzmq takes endpoints as C strings: one with a NUL inside would bind or connect the part
    /// before it.
    private static func checkEndpoint(_ endpoint: String) throws(TransportError) {
        do throws(SystemError) { try CString.check(endpoint, as: "endpoint") } catch {
            throw TransportError(operation: "use an endpoint", code: error.code, message: error.message)
        }
    }

    func bind(_ endpoint: String) throws(TransportError) {
        try Self.checkEndpoint(endpoint)
        if zmq_bind(handle, endpoint) != 0 { throw .last("bind", endpoint: endpoint) }
    }

    func connect(_ endpoint: String) throws(TransportError) {
        try Self.checkEndpoint(endpoint)
        if zmq_connect(handle, endpoint) != 0 { throw .last("connect", endpoint: endpoint) }
    }

    /// Publishes this socket's `events` (ZMQ_EVENT_* bits) on a PAIR socket bound at the inproc
    /// `endpoint` (zmq_socket_monitor). libzmq sends events with a *blocking* send from its I/O
    /// and reaper threads, so the reader must stay connected until `stopMonitoring()` (which
    /// `close()` calls) has returned; a reader closed first would hang libzmq at the next event.
    func monitor(_ endpoint: String, events: Int32) throws(TransportError) {
        try Self.checkEndpoint(endpoint)
        if zmq_socket_monitor(handle, endpoint, events) != 0 { throw .last("monitor", endpoint: endpoint) }
        isMonitored = true
    }

    /// Ends monitoring at once: once this returns, libzmq sends nothing more to the reader.
    func stopMonitoring() {
        guard let handle, isMonitored else { return }
        zmq_socket_monitor(handle, nil, 0)
        isMonitored = false
    }

    /// The endpoint of the last bind or connect, with a real port where port 0 or `*` was asked.
    func lastEndpoint() throws(TransportError) -> String {
        var buffer = [CChar](repeating: 0, count: 1024)
        var size = buffer.count
        if zmq_getsockopt(handle, ZMQ_LAST_ENDPOINT, &buffer, &size) != 0 { throw .last("get ZMQ_LAST_ENDPOINT") }
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
