/// Work paced per lane at a steady rate with a bounded burst (a virtual-clock rate limit): each
/// lane has the time until which its work is paid for. A piece of work books its estimated cost
/// before it runs and waits until the lane's earlier work is paid for; once done, its actual
/// cost settles the booking. A lane idle for `burst` may do `burst` worth of work at once.
///
/// Booking before the work staggers a lane's many waiters: they start one cost apart instead of
/// all at once when the lane's debt is paid.
struct PacingLedger<Lane: Hashable> {
    typealias Instant = ContinuousClock.Instant

    let unitsPerSecond: Double
    let burst: Duration
    private var paidUntil: [Lane: Instant] = [:]
    /// Lanes held before idle ones are forgotten (a forgotten lane is one with a full burst).
    private static var lanesKept: Int { 64 }

    init(unitsPerSecond: Int, burst: Duration) {
        self.unitsPerSecond = Double(max(1, unitsPerSecond))
        self.burst = burst
    }

    /// Books `units` of work for `lane` and says how long to wait before doing it.
    mutating func book(_ units: Int, for lane: Lane, now: Instant) -> Duration {
        if paidUntil.count >= Self.lanesKept { paidUntil = paidUntil.filter { $0.value > now - burst } }
        let start = max(paidUntil[lane] ?? now - burst, now - burst)
        paidUntil[lane] = start + cost(units)
        return start > now ? now.duration(to: start) : .zero
    }

    /// The work booked as `booked` units cost `actual`: the lane's account is corrected.
    mutating func settle(booked: Int, actual: Int, for lane: Lane) {
        guard let until = paidUntil[lane] else { return }
        paidUntil[lane] = actual >= booked ? until + cost(actual - booked) : until - cost(booked - actual)
    }

    private func cost(_ units: Int) -> Duration {
        .nanoseconds(Int64((Double(units) / unitsPerSecond * 1e9).rounded()))
    }
}
