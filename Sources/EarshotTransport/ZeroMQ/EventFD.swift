import CZMQ

#if canImport(Glibc)
    import Glibc
#endif

/// A Linux eventfd: any thread may `signal`; the loop thread polls the descriptor and `drain`s it.
///
/// Why not an `inproc://` PAIR socket: a socket may be used by one thread only, so every
/// producer would need its own; an eventfd is one counter that any number of threads may write.
final class EventFD: Sendable {
    let fileDescriptor: Int32

    init() throws(TransportError) {
        let fd = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard fd >= 0 else { throw TransportError(operation: "create an eventfd", code: errno) }
        fileDescriptor = fd
    }

    deinit {
        Glibc.close(fileDescriptor)
    }

    /// Makes the descriptor readable. Never blocks: the counter saturates far beyond any use.
    func signal() {
        var one: UInt64 = 1
        _ = write(fileDescriptor, &one, 8)
    }

    /// Clears the descriptor.
    func drain() {
        var value: UInt64 = 0
        _ = read(fileDescriptor, &value, 8)
    }
}
