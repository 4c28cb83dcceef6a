#if canImport(Glibc)
    import Glibc
#endif

/// The listening TCP sockets libzmq made for a server socket, with a kernel filter that can turn
/// new connections away before anything is accepted.
///
/// libzmq accepts every connection as fast as it can, and a burst of them outruns anything that
/// shuts connections after the fact. A classic-BPF socket filter on the listening socket
/// (`SO_ATTACH_FILTER`) runs in the kernel on each incoming connection request: while the gate
/// is closed, or for a blocked IPv4 source address, the SYN is dropped — no accept, no
/// descriptor, no work — and the client's TCP tries again a second or more later. Connections
/// already open have their own sockets and are not touched.
///
/// The descriptors stay libzmq's: the gate only sets filters on them, and must be dropped
/// (`ConnectionLimiter.forget`) before the socket that owns them is closed.
final class ListenerGate: @unchecked Sendable {
    /// Listening descriptors and their address family.
    let listeners: [(fd: Int32, family: Int32)]

    /// How many addresses a filter can name (a jump offset is a byte; the rest is margin).
    static let maximumBlocked = 64

    private init(listeners: [(fd: Int32, family: Int32)]) {
        self.listeners = listeners
    }

    /// Finds the listening sockets of `endpoints` ("tcp://127.0.0.1:7400" as bound, real ports)
    /// among the process's descriptors; nil when none is TCP or none is found.
    static func find(boundTo endpoints: [String]) -> ListenerGate? {
        let ports = Set(endpoints.compactMap(tcpPort(of:)))
        guard !ports.isEmpty, let folder = opendir("/proc/self/fd") else { return nil }
        defer { closedir(folder) }
        var found: [(Int32, Int32)] = []
        while let entry = readdir(folder) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
            guard let fd = Int32(name), let (family, port) = listeningAddress(fd), ports.contains(port) else { continue }
            found.append((fd, family))
        }
        return found.isEmpty ? nil : ListenerGate(listeners: found)
    }

    /// Lets everyone in (`closed` false, nothing blocked), nobody (`closed`), or everyone but
    /// the `blocked` IPv4 addresses (host byte order). A listener of another family cannot name
    /// addresses and stays open to them.
    func apply(closed: Bool, blocked: [UInt32]) {
        for (fd, family) in listeners {
            if closed {
                Self.attach([Self.drop], to: fd)
            } else if family == AF_INET, !blocked.isEmpty {
                Self.attach(Self.blocking(Array(blocked.prefix(Self.maximumBlocked))), to: fd)
            } else {
                var unused: Int32 = 0
                _ = setsockopt(fd, SOL_SOCKET, Self.detachFilter, &unused, socklen_t(MemoryLayout<Int32>.size))
            }
        }
    }

    // MARK: Classic BPF

    /// `struct sock_filter` and `struct sock_fprog` of <linux/filter.h>.
    private struct Instruction {
        var code: UInt16
        var jumpIfTrue: UInt8
        var jumpIfFalse: UInt8
        var k: UInt32
    }

    private struct Program {
        var length: UInt16
        var instructions: UnsafeMutablePointer<Instruction>?
    }

    private static let attachFilter: Int32 = 26  // SO_ATTACH_FILTER
    private static let detachFilter: Int32 = 27  // SO_DETACH_FILTER
    private static let loadWordAbsolute: UInt16 = 0x00 | 0x00 | 0x20  // BPF_LD | BPF_W | BPF_ABS
    private static let jumpIfEqual: UInt16 = 0x05 | 0x10 | 0x00  // BPF_JMP | BPF_JEQ | BPF_K
    private static let returnConstant: UInt16 = 0x06 | 0x00  // BPF_RET | BPF_K
    /// SKF_NET_OFF + 12: the IPv4 source address, counted from the network header.
    private static let ipv4Source = UInt32(bitPattern: -0x100000 + 12)

    private static let drop = Instruction(code: returnConstant, jumpIfTrue: 0, jumpIfFalse: 0, k: 0)
    private static let keep = Instruction(code: returnConstant, jumpIfTrue: 0, jumpIfFalse: 0, k: UInt32.max)

    /// Load the source address; for each blocked one, jump to `drop` when equal; else `keep`.
    private static func blocking(_ addresses: [UInt32]) -> [Instruction] {
        var program = [Instruction(code: loadWordAbsolute, jumpIfTrue: 0, jumpIfFalse: 0, k: ipv4Source)]
        for (index, address) in addresses.enumerated() {
            // From instruction 1 + index, `drop` is at 1 + count + 1.
            program.append(Instruction(code: jumpIfEqual, jumpIfTrue: UInt8(addresses.count - index), jumpIfFalse: 0, k: address))
        }
        return program + [keep, drop]
    }

    private static func attach(_ instructions: [Instruction], to fd: Int32) {
        var instructions = instructions
        instructions.withUnsafeMutableBufferPointer { buffer in
            var program = Program(length: UInt16(buffer.count), instructions: buffer.baseAddress)
            _ = setsockopt(fd, SOL_SOCKET, attachFilter, &program, socklen_t(MemoryLayout<Program>.size))
        }
    }

    // MARK: Finding libzmq's listeners

    /// The port of "tcp://host:port".
    private static func tcpPort(of endpoint: String) -> UInt16? {
        guard endpoint.hasPrefix("tcp://"), let colon = endpoint.lastIndex(of: ":") else { return nil }
        return UInt16(endpoint[endpoint.index(after: colon)...])
    }

    /// Family and port of a listening TCP socket; nil for any other descriptor.
    private static func listeningAddress(_ fd: Int32) -> (Int32, UInt16)? {
        var listening: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) == 0, listening != 0 else { return nil }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let status = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard status == 0 else { return nil }
        let family = Int32(storage.ss_family)
        return withUnsafePointer(to: &storage) { pointer -> (Int32, UInt16)? in
            switch family {
            case AF_INET: pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { (family, UInt16(bigEndian: $0.pointee.sin_port)) }
            case AF_INET6: pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { (family, UInt16(bigEndian: $0.pointee.sin6_port)) }
            default: nil
            }
        }
    }
}
