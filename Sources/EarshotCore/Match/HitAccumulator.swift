/// Counts hits per (speed hypothesis, offset bin) in an open-addressing table that is kept between
/// queries and cleared through its list of used slots, so a query allocates nothing once warm.
struct HitAccumulator {
    private var keys: [UInt64]
    private var counts: [UInt32]
    private var used: [Int32] = []
    private var mask: Int
    static let empty = UInt64.max

    init(capacity: Int = 1 << 15) {
        keys = [UInt64](repeating: Self.empty, count: capacity)
        counts = [UInt32](repeating: 0, count: capacity)
        mask = capacity - 1
        used.reserveCapacity(capacity / 2)
    }

    static func key(hypothesis: Int, bin: Int) -> UInt64 {
        UInt64(hypothesis) << 32 | UInt64(UInt32(bitPattern: Int32(truncatingIfNeeded: bin)))
    }

    @inline(__always)
    private func slot(of key: UInt64) -> Int {
        Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> 40) & mask
    }

    mutating func add(_ key: UInt64) {
        if used.count * 2 >= keys.count { grow() }
        var s = slot(of: key)
        while true {
            if keys[s] == key { counts[s] += 1; return }
            if keys[s] == Self.empty {
                keys[s] = key
                counts[s] = 1
                used.append(Int32(s))
                return
            }
            s = (s + 1) & mask
        }
    }

    func count(_ key: UInt64) -> Int {
        var s = slot(of: key)
        while true {
            if keys[s] == key { return Int(counts[s]) }
            if keys[s] == Self.empty { return 0 }
            s = (s + 1) & mask
        }
    }

    func forEach(_ body: (UInt64, Int) -> Void) {
        for s in used { body(keys[Int(s)], Int(counts[Int(s)])) }
    }

    mutating func clear() {
        for s in used { keys[Int(s)] = Self.empty; counts[Int(s)] = 0 }
        used.removeAll(keepingCapacity: true)
    }

    private mutating func grow() {
        let entries = used.map { (keys[Int($0)], counts[Int($0)]) }
        let capacity = keys.count * 2
        keys = [UInt64](repeating: Self.empty, count: capacity)
        counts = [UInt32](repeating: 0, count: capacity)
        mask = capacity - 1
        used.removeAll(keepingCapacity: true)
        for (k, c) in entries {
            var s = slot(of: k)
            while keys[s] != Self.empty { s = (s + 1) & mask }
            keys[s] = k
            counts[s] = c
            used.append(Int32(s))
        }
    }
}
