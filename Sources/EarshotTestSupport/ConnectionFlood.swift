#if canImport(Glibc)
    import Glibc
#endif

import Foundation
import Synchronization

/// Plain TCP connections that never say a word: what a port scanner leaves, or an attacker who
/// holds connections open without ever handshaking. Keeps `connections` of them open to a
/// `tcp://host:port` endpoint, opening a new one as soon as the server closes one, on its own
/// thread, until stopped. For the tests and benchmark of the daemon's connection limit.
public final class ConnectionFlood: @unchecked Sendable {
    /// Connections opened so far, and how many the server closed.
    public var opened: Int { shared.opened.load(ordering: .relaxed) }
    public var closedByServer: Int { shared.closed.load(ordering: .relaxed) }

    /// What the flood's thread and the caller share.
    private final class Shared: Sendable {
        let opened = Atomic<Int>(0)
        let closed = Atomic<Int>(0)
        let stopping = Atomic<Bool>(false)
    }

    private let shared = Shared()
    private let thread: Thread
    private let finished = DispatchSemaphore(value: 0)

    /// Starts flooding `endpoint` ("tcp://127.0.0.1:7400") with `connections` at once.
    public init(endpoint: String, connections: Int) throws {
        let address = try Self.address(of: endpoint)
        Self.raiseDescriptorLimit(atLeast: connections + 256)
        let shared = self.shared, finished = self.finished
        thread = Thread {
            Self.run(address: address, connections: connections, shared: shared)
            finished.signal()
        }
        thread.name = "connection-flood"
        thread.start()
    }

    /// Stops, closes every connection, and returns once they are closed.
    public func stop() {
        guard !shared.stopping.exchange(true, ordering: .relaxed) else { return }
        finished.wait()
    }

    deinit { stop() }

    private static func run(address: sockaddr_in, connections: Int, shared: Shared) {
        var open: [Int32] = []
        var scratch = [UInt8](repeating: 0, count: 256)
        while !shared.stopping.load(ordering: .relaxed) {
            while open.count < connections {
                guard let fd = connect(address) else { break }
                open.append(fd)
                shared.opened.add(1, ordering: .relaxed)
            }
            // Whatever the server closed (or sent: libzmq's greeting) is read; a closed one is
            // replaced on the next turn.
            var polls = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            _ = poll(&polls, nfds_t(polls.count), 20)
            var kept: [Int32] = []
            kept.reserveCapacity(open.count)
            for p in polls {
                if p.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0, read(p.fd, &scratch, scratch.count) <= 0 {
                    Glibc.close(p.fd)
                    shared.closed.add(1, ordering: .relaxed)
                } else {
                    kept.append(p.fd)
                }
            }
            open = kept
        }
        for fd in open { Glibc.close(fd) }
    }

    /// A non-blocking connect (it completes in the background).
    private static func connect(_ address: sockaddr_in) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = address
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard status == 0 || errno == EINPROGRESS else {
            Glibc.close(fd)
            return nil
        }
        return fd
    }

    /// The IPv4 address of "tcp://a.b.c.d:port".
    static func address(of endpoint: String) throws -> sockaddr_in {
        let hostPort = endpoint.replacingOccurrences(of: "tcp://", with: "")
        guard let colon = hostPort.lastIndex(of: ":"), let port = UInt16(hostPort[hostPort.index(after: colon)...]) else {
            throw FloodError(description: "not a tcp://host:port endpoint: \(endpoint)")
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, String(hostPort[..<colon]), &address.sin_addr) == 1 else {
            throw FloodError(description: "not an IPv4 address: \(endpoint)")
        }
        return address
    }

    /// This process needs a descriptor per connection it holds.
    static func raiseDescriptorLimit(atLeast wanted: Int) {
        var limits = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limits)
        guard limits.rlim_cur < rlim_t(wanted) else { return }
        limits.rlim_cur = min(limits.rlim_max, rlim_t(wanted))
        setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limits)
    }

    struct FloodError: Error, CustomStringConvertible {
        var description: String
    }
}
