/// A set of offset bins (`OffsetHistogram`'s), one bit per bin over the catalog's timeline, for
/// asking of every hit whether it lies near any of a few chosen bins (`CandidateFitter.gather`):
/// a load or two and a test, where a bisection over the chosen bins mispredicts a branch or more
/// per hit. At 100 hours the bits take 176 KB, more than L1 holds, and hits fall anywhere on the
/// timeline; so a summary with one bit per word of bins (2.75 KB) answers first, and turns away
/// nearly every hit from L1. Made once with the matcher; `clear` unsets only what `mark` set, so
/// a use costs what it marks, not the timeline.
struct BinMarks {
    private var words: [UInt64]
    /// Bit `w` set: word `w` of `words` has a bin marked.
    private var summary: [UInt64]
    /// The word ranges `mark` touched since the last `clear`.
    private var touched: [Range<Int>] = []
    let binCount: Int

    init(binCount: Int) {
        self.binCount = max(0, binCount)
        words = [UInt64](repeating: 0, count: (self.binCount + 63) / 64)
        summary = [UInt64](repeating: 0, count: (words.count + 63) / 64)
    }

    /// Adds the bins of `bins` that lie on the timeline.
    mutating func mark(_ bins: ClosedRange<Int>) {
        let lo = max(0, bins.lowerBound), hi = min(binCount - 1, bins.upperBound)
        guard lo <= hi else { return }
        for b in lo...hi {
            words[b >> 6] |= 1 << UInt64(b & 63)
            summary[b >> 12] |= 1 << UInt64((b >> 6) & 63)
        }
        touched.append((lo >> 6)..<((hi >> 6) + 1))
    }

    /// Removes every bin marked.
    mutating func clear() {
        for range in touched {
            for w in range {
                words[w] = 0
                summary[w >> 6] = 0
            }
        }
        touched.removeAll(keepingCapacity: true)
    }

    /// Calls `body` with a lookup of the bins marked now.
    func withLookup<R>(_ body: (Lookup) -> R) -> R {
        words.withUnsafeBufferPointer { w in
            summary.withUnsafeBufferPointer { body(Lookup(words: w, summary: $0, binCount: binCount)) }
        }
    }

    struct Lookup {
        fileprivate let words: UnsafeBufferPointer<UInt64>
        fileprivate let summary: UnsafeBufferPointer<UInt64>
        fileprivate let binCount: Int

        /// Whether `bin` is marked; false off the timeline.
        @inline(__always)
        func contains(_ bin: Int) -> Bool {
            guard bin >= 0, bin < binCount, summary[bin >> 12] & (1 << UInt64((bin >> 6) & 63)) != 0 else { return false }
            return words[bin >> 6] & (1 << UInt64(bin & 63)) != 0
        }
    }
}
