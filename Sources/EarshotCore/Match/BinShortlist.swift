/// The offset bins with the highest scores, kept while `OffsetHistogram.forEachBin` walks every
/// bin hit. Keeps three times as many as will be chosen: most bins hold a hit or two and are
/// turned away by one comparison with the weakest kept, which is looked for again only after a
/// replacement.
struct BinShortlist<Score: Comparable & Sendable> {
    private let count: Int
    private let capacity: Int
    private var best: [(score: Score, bin: Int)] = []
    private var weakest = 0

    /// A shortlist from which up to `count` bins will be chosen.
    init(choosing count: Int) {
        self.count = count
        capacity = 3 * count
        best.reserveCapacity(capacity)
    }

    /// Higher scores first, then earlier bins: the same shortlist whatever order bins come in.
    private static func ahead(_ a: (score: Score, bin: Int), _ b: (score: Score, bin: Int)) -> Bool {
        a.score != b.score ? a.score > b.score : a.bin < b.bin
    }

    /// Whether a bin of `score` would be kept now (cheap: one comparison once full).
    @inline(__always)
    func admits(_ score: Score, bin: Int) -> Bool {
        capacity > 0 && (best.count < capacity || Self.ahead((score, bin), best[weakest]))
    }

    mutating func offer(_ score: Score, bin: Int) {
        guard capacity > 0 else { return }
        if best.count < capacity {
            best.append((score, bin))
            if best.count == capacity { weakest = best.indices.min { Self.ahead(best[$1], best[$0]) }! }
        } else if Self.ahead((score, bin), best[weakest]) {
            best[weakest] = (score, bin)
            weakest = best.indices.min { Self.ahead(best[$1], best[$0]) }!
        }
    }

    /// Up to `count` bins, best first; a bin within 2 of a better one chosen is the same place
    /// and is passed over.
    mutating func chosen() -> [Int] {
        best.sort(by: Self.ahead)
        weakest = best.count - 1
        var chosen: [Int] = []
        for (_, bin) in best where chosen.count < count {
            if chosen.contains(where: { abs($0 - bin) <= 2 }) { continue }
            chosen.append(bin)
        }
        return chosen
    }
}
