import CZMQ

/// `zmq_poll` over sockets and plain file descriptors.
///
/// The DRAFT `zmq_poller` API is not in Debian's libzmq 4.3.4; `zmq_poll` is, and it takes raw
/// descriptors too, which is how an eventfd wakes the loop.
struct ZMQPollSet {
    private(set) var items: [zmq_pollitem_t] = []

    mutating func removeAll() {
        items.removeAll(keepingCapacity: true)
    }

    mutating func add(_ socket: ZMQSocket, writable: Bool = false) {
        let events = Int16(ZMQ_POLLIN) | (writable ? Int16(ZMQ_POLLOUT) : 0)
        items.append(zmq_pollitem_t(socket: socket.handle, fd: -1, events: events, revents: 0))
    }

    mutating func add(fileDescriptor: Int32) {
        items.append(zmq_pollitem_t(socket: nil, fd: fileDescriptor, events: Int16(ZMQ_POLLIN), revents: 0))
    }

    func isReadable(_ index: Int) -> Bool { items[index].revents & Int16(ZMQ_POLLIN) != 0 }
    func isWritable(_ index: Int) -> Bool { items[index].revents & Int16(ZMQ_POLLOUT) != 0 }

    /// Waits up to `timeoutMilliseconds` (-1: forever) for any item to be ready. A signal
    /// interrupting the wait counts as a timeout.
    mutating func poll(timeoutMilliseconds: Int) throws(TransportError) {
        for i in items.indices { items[i].revents = 0 }
        let count = items.withUnsafeMutableBufferPointer { zmq_poll($0.baseAddress, Int32($0.count), timeoutMilliseconds) }
        if count < 0 && zmq_errno() != EINTR { throw .last("poll") }
    }
}
