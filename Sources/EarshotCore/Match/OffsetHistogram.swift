/// Counts hits per offset bin (reference frame − query frame, in bins of 2^`binShift` frames) for
/// one speed hypothesis at a time.
///
/// `forEachBin` lists the hits' bins, sorts the list (a radix sort, one to three passes over it)
/// and counts runs. A dense array of counters over the catalog's timeline would need one
/// increment per hit, but at 100 hours it spans 2.8 MB, nearly three times this machine's L2 per
/// core, and nearly every increment misses the cache (benchmarks/studies/match-time-optimizations.md).
/// The list is written front to back and sorted in passes whose counters fit in L1. Counts are
/// exact.
struct OffsetHistogram {
    static let binShift = 5
    /// The bins of the hits being counted (scratch, kept between calls).
    private var hits: [UInt32] = []
    private var scratch: [UInt32] = []
    /// The weights of the hits being counted, when weighted, in the order of `hits` (scratch).
    private var hitWeights: [Float] = []
    private var weightScratch: [Float] = []
    /// Radix digits: `passes` of `digitBits` cover every bin.
    private let passes: Int
    private let digitBits: Int
    private var digitCounts: [Int]
    /// Number of bins: offsets beyond them are not counted (a corrupt posting).
    let binCount: Int
    /// Offsets are shifted by this many frames so a query that starts before a reference (a
    /// negative offset) still has a bin.
    let margin: Int

    init(timelineFrames: Int, margin: Int) {
        self.margin = margin
        binCount = ((timelineFrames + 2 * margin) >> Self.binShift) + 1
        let bits = max(1, Int.bitWidth - max(binCount - 1, 1).leadingZeroBitCount)
        // Digits of at most 11 bits: their counters (16 KB) stay in L1.
        passes = (bits + 10) / 11
        digitBits = (bits + passes - 1) / passes
        digitCounts = [Int](repeating: 0, count: 1 << digitBits)
    }

    /// The bin of an offset in frames; nil outside the timeline (a corrupt posting).
    @inline(__always)
    func bin(ofOffset offset: Int) -> Int? {
        let b = (offset + margin) >> Self.binShift
        return b >= 0 && b < binCount ? b : nil
    }

    /// Calls `body(bin, hits in bin-1...bin+1)` once for every bin hit, in ascending order of
    /// bins. Hit `i` is at offset `referenceFrames[i] − queryFrames[i]`, which `bin(ofOffset:)`
    /// accepted when it was collected.
    @inline(__always)
    mutating func forEachBin(queryFrames: [Int32], referenceFrames: [Int32], _ body: (Int, Int) -> Void) {
        forEachBin(queryFrames: queryFrames, referenceFrames: referenceFrames, weights: nil) { bin, hits, _ in
            body(bin, hits)
        }
    }

    /// As `forEachBin(queryFrames:referenceFrames:_:)`, and hit `i` weighs `weights[i]`:
    /// `body(bin, hits, their weight)`, both summed over bin-1...bin+1. Without weights the
    /// weight passed is 0. Inlined, with the unweighted form, so each caller's `body` is inlined
    /// into the walk instead of called per bin: a 100 h search walks hundreds of thousands of bins
    /// per query (benchmarks/studies/match-time-optimizations.md).
    @inline(__always)
    mutating func forEachBin(queryFrames: [Int32], referenceFrames: [Int32], weights: [Float]?,
                             _ body: (Int, Int, Double) -> Void) {
        precondition(queryFrames.count == referenceFrames.count)
        precondition(weights.map { $0.count == queryFrames.count } ?? true)
        let n = queryFrames.count
        guard n > 0 else { return }
        if hits.count < n { hits = [UInt32](repeating: 0, count: n + n / 4) }
        let margin = self.margin
        hits.withUnsafeMutableBufferPointer { bins in
            queryFrames.withUnsafeBufferPointer { q in
                referenceFrames.withUnsafeBufferPointer { r in
                    for i in 0..<n { bins[i] = UInt32(truncatingIfNeeded: (Int(r[i]) - Int(q[i]) + margin) >> Self.binShift) }
                }
            }
        }
        if let weights {
            if hitWeights.count < n { hitWeights = [Float](repeating: 0, count: n + n / 4) }
            hitWeights.withUnsafeMutableBufferPointer { w in
                weights.withUnsafeBufferPointer { _ = w.update(fromContentsOf: $0) }
            }
        }
        let weighted = weights != nil
        sortHits(count: n, carryingWeights: weighted)
        hits.withUnsafeBufferPointer { all in
            hitWeights.withUnsafeBufferPointer { allWeights in
                let sorted = UnsafeBufferPointer(rebasing: all[0..<n])
                let sortedWeights = weighted ? UnsafeBufferPointer(rebasing: allWeights[0..<n]) : nil
                // Runs of one bin, with the runs before and after for the neighbours' counts; each
                // run is measured once, as the next run, then used as the current one.
                var previous = Run.none
                var current = Self.run(sorted, sortedWeights, from: 0)
                var start = 0
                while start < n {
                    let end = start + current.count
                    let following = end < n ? Self.run(sorted, sortedWeights, from: end) : Run.none
                    let next = following.bin == current.bin + 1 ? following : Run.none
                    let before = previous.bin == current.bin - 1 ? previous : Run.none
                    body(current.bin, before.count + current.count + next.count, before.weight + current.weight + next.weight)
                    previous = current
                    start = end
                    current = following
                }
            }
        }
    }

    /// A run of equal bins in the sorted hits: its length and the sum of its hits' weights.
    private struct Run {
        var bin: Int
        var count: Int
        var weight: Double
        /// No run: no bin is next to it (bins are from 0).
        static let none = Run(bin: -2, count: 0, weight: 0)
    }

    /// The run of equal bins starting at `start` (its weight 0 without weights).
    @inline(__always)
    private static func run(_ sorted: UnsafeBufferPointer<UInt32>, _ weights: UnsafeBufferPointer<Float>?,
                            from start: Int) -> Run {
        var end = start + 1
        while end < sorted.count, sorted[end] == sorted[start] { end += 1 }
        var weight = 0.0
        if let weights { for i in start..<end { weight += Double(weights[i]) } }
        return Run(bin: Int(sorted[start]), count: end - start, weight: weight)
    }

    /// Sorts `hits[0..<n]` ascending, and `hitWeights[0..<n]` with them when carried: least
    /// significant digit first, each pass a stable scatter.
    private mutating func sortHits(count n: Int, carryingWeights: Bool) {
        if scratch.count < n { scratch = [UInt32](repeating: 0, count: n + n / 4) }
        if carryingWeights, weightScratch.count < n { weightScratch = [Float](repeating: 0, count: n + n / 4) }
        let mask = UInt32((1 << digitBits) - 1)
        let digits = 1 << digitBits
        for pass in 0..<passes {
            let shift = UInt32(pass * digitBits)
            hits.withUnsafeMutableBufferPointer { source in
                scratch.withUnsafeMutableBufferPointer { target in
                    digitCounts.withUnsafeMutableBufferPointer { counts in
                        for d in 0..<digits { counts[d] = 0 }
                        for i in 0..<n { counts[Int((source[i] >> shift) & mask)] += 1 }
                        var sum = 0
                        for d in 0..<digits {
                            let c = counts[d]
                            counts[d] = sum
                            sum += c
                        }
                        if carryingWeights {
                            hitWeights.withUnsafeBufferPointer { sourceWeights in
                                weightScratch.withUnsafeMutableBufferPointer { targetWeights in
                                    for i in 0..<n {
                                        let v = source[i]
                                        let d = Int((v >> shift) & mask)
                                        target[counts[d]] = v
                                        targetWeights[counts[d]] = sourceWeights[i]
                                        counts[d] += 1
                                    }
                                }
                            }
                        } else {
                            for i in 0..<n {
                                let v = source[i]
                                let d = Int((v >> shift) & mask)
                                target[counts[d]] = v
                                counts[d] += 1
                            }
                        }
                    }
                }
            }
            // The sorted pass becomes `hits`, the next pass's source (both hold at least n).
            swap(&hits, &scratch)
            if carryingWeights { swap(&hitWeights, &weightScratch) }
        }
    }
}
