#if canImport(Glibc)
    import Glibc
#endif

import EarshotSync

/// Caps the TCP connections of the server sockets that share it (the daemon's RPC and events
/// sockets), so that connections — above all ones that never finish a handshake — can never take
/// the descriptors the process needs for its own files, catalogs, sound card and database.
///
/// libzmq accepts every connection itself, so the limits act in two places:
///
/// - at the door: when the limit is reached, the sockets' `ListenerGate`s have the kernel drop
///   new connection requests (for one address, when that address is at its own limit), so a
///   flood costs no accept and no descriptor; the gate opens again once a few places are free;
/// - just after accepting, for what got past the door before it closed: the socket monitor
///   reports the descriptor and a connection over a limit is shut down with `shutdown(2)`, never
///   `close(2)` (the descriptor stays libzmq's, which reads the end of the stream and closes it).
///
/// Connections already open are never touched, so clients that are in stay served. Calls come
/// from the transport loop's thread (and `guardListeners` from the thread binding the socket);
/// the lock is for those and for readers of `statistics`.
public final class ConnectionLimiter: Sendable {
    public struct Limits: Sendable, Equatable {
        /// Connections open at once over every socket sharing the limiter.
        public var maximumConnections: Int
        /// Of those, from one IP address: one host cannot take every place.
        public var maximumPerAddress: Int

        public init(maximumConnections: Int, maximumPerAddress: Int) {
            self.maximumConnections = max(1, maximumConnections)
            self.maximumPerAddress = max(1, min(maximumPerAddress, maximumConnections))
        }
    }

    public struct Statistics: Sendable, Equatable {
        public var open = 0
        /// The most connections open at once.
        public var peak = 0
        /// Connections shut down at once because a limit was reached.
        public var refused = 0
        /// Why the last one was refused, and its address.
        public var lastRefusal: String?
        public var lastRefusedAddress: String?
        /// Whether the listeners turn every new connection away now, and how often they began to.
        public var closedToNewConnections = false
        public var closings = 0
        /// Addresses whose new connections are turned away now (at their own limit).
        public var blockedAddresses = 0
        /// Listening sockets under the limiter's control.
        public var guardedListeners = 0

        public init() {}
    }

    private struct Connection {
        let address: String
        let owner: ObjectIdentifier
    }

    private struct State {
        var open: [Int32: Connection] = [:]
        var perAddress: [String: Int] = [:]
        /// The counters; what the rest of the state shows is filled in by `statistics`.
        var statistics = Statistics()
        var gates: [ObjectIdentifier: ListenerGate] = [:]
        var closed = false
        var blocked: Set<String> = []

        mutating func remove(_ fd: Int32) {
            guard let gone = open.removeValue(forKey: fd) else { return }
            let left = perAddress[gone.address, default: 1] - 1
            perAddress[gone.address] = left > 0 ? left : nil
        }
    }

    public let limits: Limits
    private let state = Locked(State())

    /// The listen backlog of the server sockets: connections the kernel completes before libzmq
    /// accepts them, all of which can get past a door that closes as they arrive. Small, so that
    /// such a burst stays well inside the descriptors kept in reserve.
    public static let listenBacklog: Int32 = 32

    public init(limits: Limits) {
        self.limits = limits
    }

    public var statistics: Statistics {
        state.withLock { s in
            var statistics = s.statistics
            statistics.open = s.open.count
            statistics.closedToNewConnections = s.closed
            statistics.blockedAddresses = s.blocked.count
            statistics.guardedListeners = s.gates.values.reduce(0) { $0 + $1.listeners.count }
            return statistics
        }
    }

    /// A connection was accepted on descriptor `fd` by the socket `owner`; returns whether it may
    /// stay. One that may not has been shut down already.
    @discardableResult
    func accepted(_ fd: Int32, by owner: ObjectIdentifier) -> Bool {
        let address = Self.peerAddress(of: fd) ?? "?"
        let refusal = state.withLock { s -> String? in
            // The descriptor number is back: whoever had it before has closed (its end may not
            // have been reported yet by the other socket's monitor).
            s.remove(fd)
            if s.open.count >= limits.maximumConnections {
                return "\(s.open.count) connections are open (at most \(limits.maximumConnections))"
            }
            if s.perAddress[address, default: 0] >= limits.maximumPerAddress {
                return "\(s.perAddress[address, default: 0]) connections from \(address) are open (at most \(limits.maximumPerAddress) per address)"
            }
            s.open[fd] = Connection(address: address, owner: owner)
            s.perAddress[address, default: 0] += 1
            s.statistics.peak = max(s.statistics.peak, s.open.count)
            updateGates(&s)
            return nil
        }
        guard let refusal else { return true }
        Self.shutDown(fd)
        state.withLock {
            $0.statistics.refused += 1
            $0.statistics.lastRefusal = refusal
            $0.statistics.lastRefusedAddress = address
            updateGates(&$0)
        }
        return false
    }

    /// Puts the listening sockets of `endpoints` (bound by socket `owner`) under the limits.
    /// Call right after binding; `forget` before closing the socket.
    func guardListeners(of owner: ObjectIdentifier, boundTo endpoints: [String]) {
        guard let gate = ListenerGate.find(boundTo: endpoints) else { return }
        state.withLock { s in
            s.gates[owner] = gate
            gate.apply(closed: s.closed, blocked: Self.ipv4(s.blocked))
        }
    }

    /// Stops touching the listeners of socket `owner` (it is about to close them).
    func forget(_ owner: ObjectIdentifier) {
        state.withLock { $0.gates[owner] = nil }
    }

    /// Closes the door a listen backlog before the limit — what the kernel already completed, and
    /// what the socket monitor has not reported yet, still gets in after it closes — and opens it
    /// again only when half of that is free: a flood's retries arrive in a burst as it opens, and
    /// when this thread is starved of CPU the burst gets far past the door before it is seen
    /// (the daemon keeps descriptors for it); it should start low. Each address at its own limit is
    /// blocked, and let in again a few places below it.
    private func updateGates(_ s: inout State) {
        let maximum = limits.maximumConnections, perAddress = limits.maximumPerAddress
        let closeAt = max(maximum - Int(Self.listenBacklog), maximum * 3 / 4, 1)
        var closed = s.closed
        if s.open.count >= closeAt { closed = true }
        if s.open.count <= closeAt / 2 { closed = false }
        var blocked = s.blocked.filter { s.perAddress[$0, default: 0] > perAddress - max(1, perAddress / 16) }
        for (address, count) in s.perAddress where count >= perAddress { blocked.insert(address) }
        guard closed != s.closed || blocked != s.blocked else { return }
        if closed && !s.closed { s.statistics.closings += 1 }
        s.closed = closed
        s.blocked = blocked
        let addresses = Self.ipv4(blocked)
        for gate in s.gates.values { gate.apply(closed: closed, blocked: addresses) }
    }

    /// IPv4 addresses in host byte order (others cannot be named in a filter).
    private static func ipv4(_ addresses: Set<String>) -> [UInt32] {
        addresses.compactMap { text in
            var address = in_addr()
            return inet_pton(AF_INET, text, &address) == 1 ? UInt32(bigEndian: address.s_addr) : nil
        }
    }

    /// The connection on `fd` of socket `owner` has closed.
    func closed(_ fd: Int32, by owner: ObjectIdentifier) {
        state.withLock { s in
            // Another socket's connection may hold the number by now; leave that one be.
            guard s.open[fd]?.owner == owner else { return }
            s.remove(fd)
            updateGates(&s)
        }
    }

    /// Ends a connection libzmq owns without taking its descriptor away: libzmq sees the end of
    /// the stream and closes it. A listening socket is never shut down (were the number ever to
    /// have been reused for one, that would stop libzmq's accepting for good).
    ///
    /// What the peer sent that libzmq has yet to read is discarded too (MSG_TRUNC: dropped in
    /// the kernel, not copied): after a shutdown the queued bytes stay readable, and a flood
    /// queued there would still be decoded, and its subscriptions stored, before the end.
    static func shutDown(_ fd: Int32) {
        var listening: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        if getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) != 0 || listening != 0 { return }
        _ = shutdown(fd, Int32(SHUT_RDWR))
        let flags = Int32(MSG_TRUNC) | Int32(MSG_DONTWAIT)
        while recv(fd, nil, 1 << 20, flags) > 0 {}
    }

    /// The remote IP address of a connected socket, as text.
    static func peerAddress(of fd: Int32) -> String? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let status = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
        }
        guard status == 0 else { return nil }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = Int32(storage.ss_family)
        let converted: UnsafePointer<CChar>? = withUnsafePointer(to: &storage) { pointer in
            switch family {
            case AF_INET:
                pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                    var address = sin.pointee.sin_addr
                    return inet_ntop(AF_INET, &address, &text, socklen_t(text.count))
                }
            case AF_INET6:
                pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin6 in
                    var address = sin6.pointee.sin6_addr
                    return inet_ntop(AF_INET6, &address, &text, socklen_t(text.count))
                }
            default:
                nil
            }
        }
        guard converted != nil else { return nil }
        return String(decoding: text.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
