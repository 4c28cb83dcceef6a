/// Counts hits per offset bin (reference frame − query frame, in bins of 2^`binShift` frames) for
/// one speed hypothesis at a time.
///
/// A dense array over the catalog's timeline: one increment per hit, no hashing, no probing. It is
/// made once per matcher; after each hypothesis only the touched bins are read and reset, so a
/// query never clears or allocates the whole array.
struct OffsetHistogram {
    static let binShift = 5
    private var counts: [UInt16]
    private var touched: [Int32] = []
    /// Offsets are shifted by this many frames so a query that starts before a reference (a
    /// negative offset) still has a bin.
    let margin: Int

    /// A placeholder holding no storage (to swap the real one out of its owner).
    static let empty = OffsetHistogram(timelineFrames: 0, margin: 0)

    init(timelineFrames: Int, margin: Int) {
        self.margin = margin
        counts = [UInt16](repeating: 0, count: ((timelineFrames + 2 * margin) >> Self.binShift) + 2)
        touched.reserveCapacity(1 << 14)
    }

    /// The bin of an offset in frames; nil outside the timeline (a corrupt posting).
    @inline(__always)
    func bin(ofOffset offset: Int) -> Int? {
        let b = (offset + margin) >> Self.binShift
        return b >= 0 && b < counts.count - 1 ? b : nil
    }

    @inline(__always)
    mutating func add(bin: Int) {
        let c = counts[bin]
        if c == 0 { touched.append(Int32(bin)) }
        if c < UInt16.max { counts[bin] = c + 1 }
    }

    func count(_ bin: Int) -> Int { bin >= 0 && bin < counts.count ? Int(counts[bin]) : 0 }

    /// Calls `body(bin, hits in bin-1...bin+1)` for every touched bin, then resets them.
    mutating func drain(_ body: (Int, Int) -> Void) {
        for b in touched {
            let bin = Int(b)
            body(bin, Int(counts[bin]) + count(bin - 1) + count(bin + 1))
        }
        for b in touched { counts[Int(b)] = 0 }
        touched.removeAll(keepingCapacity: true)
    }
}
