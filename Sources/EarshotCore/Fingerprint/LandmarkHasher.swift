/// Turns peaks into landmarks: hashes of peak pairs (anchor, target) with the anchor's time.
///
/// A pair hash packs the anchor's frequency (2-bin buckets), the frequency difference and the time
/// difference, all in whole bins/frames (Wang 2003). Such hashes break when audio is sped up, so
/// the matcher maps query peaks into reference coordinates under a grid of speed hypotheses
/// (`speed`) before hashing: a query played `speed`× fast has frequencies `speed`× higher and
/// times `speed`× shorter. References are hashed at `speed` 1.
public enum LandmarkHasher {
    /// Largest time difference between paired peaks, in frames (~0.5 s).
    public static let maximumFrameDelta = 63
    /// Largest frequency difference between paired peaks, in bins (~1 kHz).
    public static let maximumBinDelta = 63
    /// Targets per anchor when indexing references (keeps the catalog ≤ 1 MB per hour).
    public static let referenceFanOut = 3
    /// Targets per anchor for queries: more than references, so a reference pair is found even
    /// when noise adds peaks between its two ends.
    public static let queryFanOut = 8

    /// One landmark: the hash key, the anchor frame in reference coordinates, and 4 bits giving
    /// the anchor's frequency inside its 2-bin bucket (1/8 bin), used to measure frequency skew.
    public struct Landmark: Equatable, Sendable {
        public var key: UInt32
        public var frame: Int32
        public var fineBin: UInt8
    }

    /// Calls `body` for every landmark of `peaks` (in time order) under a speed hypothesis.
    /// `body` also receives the index of the anchor peak.
    @inline(__always)
    public static func forEachLandmark(
        _ peaks: UnsafeBufferPointer<Peak>, fanOut: Int, speed: Float = 1,
        _ body: (Landmark, Int) -> Void
    ) {
        let timeScale = speed, binScale = 1 / speed
        let count = peaks.count
        for i in 0..<count {
            let a = peaks[i]
            let at = a.time * timeScale, ab = a.bin * binScale
            let t1 = Int(at.rounded()), f1 = Int(ab.rounded())
            guard f1 >= 0, f1 < 256 else { continue }
            var found = 0
            var j = i + 1
            while j < count, found < fanOut {
                let b = peaks[j]
                let t2 = Int((b.time * timeScale).rounded())
                let dt = t2 - t1
                if dt > maximumFrameDelta { break }
                j += 1
                let df = Int((b.bin * binScale).rounded()) - f1
                guard dt >= 1, df >= -maximumBinDelta, df <= maximumBinDelta else { continue }
                found += 1
                let bucket = f1 >> 1
                let raw = UInt32(bucket) << 13 | UInt32(df + 64) << 6 | UInt32(dt)
                let fine = UInt8(max(0, min(15, Int((ab - (Float(bucket * 2) - 0.5)) * 8))))
                body(Landmark(key: mix(raw), frame: Int32(t1), fineBin: fine), i)
            }
        }
    }

    /// Spreads the 20-bit pair hash over 32 bits (a bijection: odd multiplier modulo 2³²) so the
    /// catalog's bucket directory, indexed by the top bits, is evenly filled.
    @inline(__always)
    public static func mix(_ raw: UInt32) -> UInt32 { raw &* 0x9E37_79B1 }

    /// The anchor frequency (in bins) that a key and its 4-bit fine position stand for.
    @inline(__always)
    public static func anchorBin(key: UInt32, fineBin: UInt8) -> Float {
        let raw = key &* 0x0E8B_2F51  // modular inverse of the mix multiplier
        let bucket = Int(raw >> 13)
        return Float(bucket * 2) - 0.5 + (Float(fineBin) + 0.5) / 8
    }
}
