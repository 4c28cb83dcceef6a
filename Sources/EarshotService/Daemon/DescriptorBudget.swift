#if canImport(Glibc)
    import Glibc
#endif

import FoundationEssentials

/// How many file descriptors the daemon has and how many its network connections may use.
///
/// Every TCP connection costs a descriptor, and a process that runs out of them fails in places
/// it cannot recover from (libdispatch traps when it cannot open one; capture cannot reopen its
/// device). So the soft limit is raised to the hard one at start (systemd's default soft limit is
/// 1024), and connections are capped below it, leaving a reserve for the daemon's own files,
/// catalogs, the sound card and the database, whatever the network does, and room for a burst
/// of connections that gets past the closing door.
struct DescriptorBudget: Equatable {
    /// The soft limit before and after raising it.
    let limitBefore: Int
    let limit: Int
    /// Descriptors open when the budget was made (before the network sockets).
    let inUse: Int
    /// Kept for the daemon itself: never given to connections.
    let reserve: Int
    /// Connections the RPC and events sockets may hold together.
    let connections: Int

    /// The fewest descriptors kept for the daemon's own use, and the share of a larger limit.
    static let minimumReserve = 64
    static let reserveShare = 8
    /// The door (`ConnectionLimiter`) closes when the transport thread sees the connections
    /// libzmq accepted; until it does, libzmq keeps accepting, and when that thread is starved of
    /// CPU a flood's burst gets far past the door: on a 2-core machine with two busy processes
    /// beside the daemon, up to 37 connections past the cap, when nothing was kept for it (the
    /// reserve was down to 18 of 64). Connections are capped this much lower, so that the burst
    /// lands here and not in the reserve.
    static let burstAllowance = 64

    /// Raises the soft limit to the hard one and works out the budget; `configured` is the
    /// connection cap asked for (`rpc.max_connections`); `openedLater`, descriptors the daemon
    /// will open after this call (counted as in use now).
    static func make(configured: Int, openedLater: Int = 0) -> DescriptorBudget {
        var limits = rlimit()
        getrlimit(RLIMIT_NOFILE_VALUE, &limits)
        let before = Self.count(limits.rlim_cur)
        if limits.rlim_cur < limits.rlim_max {
            var raised = limits
            raised.rlim_cur = limits.rlim_max
            if setrlimit(RLIMIT_NOFILE_VALUE, &raised) == 0 { limits = raised }
        }
        return DescriptorBudget(limitBefore: before, limit: Self.count(limits.rlim_cur), inUse: openDescriptors() + openedLater,
                                configured: configured)
    }

    init(limitBefore: Int, limit: Int, inUse: Int, configured: Int) {
        self.limitBefore = limitBefore
        self.limit = limit
        self.inUse = inUse
        reserve = max(Self.minimumReserve, limit / Self.reserveShare)
        connections = max(1, min(configured, limit - inUse - reserve - Self.burstAllowance))
    }

    /// Descriptors open now (the entries of /proc/self/fd, less the one reading it).
    static func openDescriptors() -> Int {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return 0 }
        return max(0, names.count - 1)
    }

    /// `RLIM_INFINITY` never applies to descriptors (the kernel caps them at nr_open), but an
    /// Int it must fit.
    private static func count(_ value: rlim_t) -> Int {
        value >= rlim_t(Int.max) ? Int.max : Int(value)
    }

    private static var RLIMIT_NOFILE_VALUE: __rlimit_resource_t { __rlimit_resource_t(RLIMIT_NOFILE.rawValue) }
}
