/// Turns peaks into landmarks: hashes of peak pairs (anchor, target) with the anchor's time.
///
/// A pair hash packs the anchor's frequency, the frequency difference and the time difference,
/// all in whole bins/frames (Wang 2003): 8 + 7 + 6 = 21 bits. Such hashes break when audio is sped
/// up or pitch-shifted, so the matcher maps query peaks into reference coordinates under a grid of
/// hypotheses before hashing: a query whose frequencies are `pitch`× the reference's and whose
/// one second holds `timeScale` seconds of the reference. Played `s`× fast, both are `s`; a
/// pitch shift with the tempo kept has `timeScale` 1. References are hashed unmapped.
public enum LandmarkHasher {
    /// Smallest time difference between paired peaks, in frames: partials of one onset arrive
    /// together and pair the same way on every note, so they say little.
    public static let minimumFrameDelta = 2
    /// Largest time difference between paired peaks, in frames (~0.5 s).
    public static let maximumFrameDelta = 63
    /// Smallest frequency difference between paired peaks, in bins: a held note's repeated peaks
    /// pair with themselves (Δf = 0) everywhere in music and would flood the index.
    public static let minimumBinDelta = 2
    /// Largest frequency difference between paired peaks, in bins (~1 kHz).
    public static let maximumBinDelta = 63
    /// Targets per anchor when indexing references. The catalog's budget (≤ 1 MB per hour) buys
    /// either more pairs per anchor or more anchors: a noisy room leaves few peaks, and a landmark
    /// needs both of its own, so more anchors with two targets each find more than fewer with
    /// three (benchmarks/studies/reference-anchors-and-fan-out.md).
    public static let referenceFanOut = 2
    /// Targets per anchor for queries: more than references, so a reference pair is found even
    /// when noise adds peaks between its two ends.
    public static let queryFanOut = 8

    /// One landmark: the hash key, the anchor frame in reference coordinates, and 4 bits giving
    /// the anchor's frequency inside its bin (1/16 bin), from which frequency skew is measured.
    public struct Landmark: Equatable, Sendable {
        public var key: UInt32
        public var frame: Int32
        public var fineBin: UInt8
    }

    /// Calls `body` for every landmark of `peaks` (in time order) under a hypothesis (see the type).
    /// `body` also receives the index of the anchor peak. References are indexed with it.
    @inline(__always)
    public static func forEachLandmark(
        _ peaks: UnsafeBufferPointer<Peak>, fanOut: Int, timeScale: Float = 1, pitch: Float = 1,
        _ body: (Landmark, Int) -> Void
    ) {
        forEachPair(peaks, fanOut: fanOut, timeScale: timeScale, pitch: pitch) { i, at, ab, bt, bb in
            let t1 = Int(at.rounded()), f1 = Int(ab.rounded())
            let dt = Int(bt.rounded()) - t1, df = Int(bb.rounded()) - f1
            guard dt >= minimumFrameDelta, dt <= maximumFrameDelta, abs(df) >= minimumBinDelta, abs(df) <= maximumBinDelta
            else { return }
            body(landmark(t1: t1, f1: f1, dt: dt, df: df, anchorBin: ab), i)
        }
    }

    /// Time and frequency differences in a noisy query differ from the reference's by a fraction
    /// of a frame/bin (median 0.4 frame in noise), which flips their rounding about half the time.
    /// A query knows its fractional values, so it also probes the neighbouring integer whenever
    /// its value lies within this distance of it.
    public static let queryFrameTolerance: Float = 1.0
    public static let queryBinTolerance: Float = 0.35
    /// The anchor frequency is probed the same way, with a tighter window: it is measured better.
    public static let queryAnchorTolerance: Float = 0.25

    /// Like `forEachLandmark`, for queries: one call per probe, so a pair near a rounding boundary
    /// yields the keys of both neighbours. `frameTolerance` widens the time probes (a room's
    /// search, `MatchThresholds.roomFrameTolerance`); with `beyond`, only the time probes outside what
    /// that narrower tolerance probes are made (a search that widens one already made). Only
    /// every `anchorStride`-th peak anchors pairs (the matcher's coarse stage): the others are
    /// passed over before their pairs and probes are made.
    @inline(__always)
    public static func forEachQueryLandmark(
        _ peaks: UnsafeBufferPointer<Peak>, fanOut: Int, timeScale: Float, pitch: Float,
        frameTolerance: Float = queryFrameTolerance, beyond inner: Float? = nil, anchorStride: Int = 1,
        _ body: (Landmark, Int) -> Void
    ) {
        forEachPair(peaks, fanOut: fanOut, timeScale: timeScale, pitch: pitch, anchorStride: anchorStride) { i, at, ab, bt, bb in
            let t1 = Int(at.rounded())
            let dts = probes(bt - at, frameTolerance)
            let made = inner.map { Range(probes(bt - at, $0)) } ?? 0..<0
            // The frequency difference is taken between rounded bins, so it is probed per anchor bin.
            for f1 in probes(ab, queryAnchorTolerance) where f1 >= 0 && f1 < 256 {
                for df in probes(bb - Float(f1), queryBinTolerance) where abs(df) >= minimumBinDelta && abs(df) <= maximumBinDelta {
                    for dt in dts where dt >= minimumFrameDelta && dt <= maximumFrameDelta && !made.contains(dt) {
                        body(landmark(t1: t1, f1: f1, dt: dt, df: df, anchorBin: ab), i)
                    }
                }
            }
        }
    }

    /// The integers within `tolerance` of `x`, and always its rounding.
    @inline(__always)
    static func probes(_ x: Float, _ tolerance: Float) -> ClosedRange<Int> {
        let r = Int(x.rounded())
        return min(r, Int((x - tolerance).rounded(.up)))...max(r, Int((x + tolerance).rounded(.down)))
    }

    /// Walks anchor/target pairs: for each anchor (every `anchorStride`-th peak), its first
    /// `fanOut` later peaks within the target zone, with coordinates mapped by the hypothesis
    /// (fractional).
    @inline(__always)
    static func forEachPair(
        _ peaks: UnsafeBufferPointer<Peak>, fanOut: Int, timeScale: Float, pitch: Float, anchorStride: Int = 1,
        _ body: (Int, Float, Float, Float, Float) -> Void
    ) {
        precondition(anchorStride >= 1, "an anchor stride is at least 1")
        let binScale = 1 / pitch
        let count = peaks.count
        let zone = Float(maximumFrameDelta) + 1
        for i in stride(from: 0, to: count, by: anchorStride) {
            let a = peaks[i]
            let at = a.time * timeScale, ab = a.bin * binScale
            guard ab >= 0, ab < 255.5 else { continue }
            var found = 0
            var j = i + 1
            while j < count, found < fanOut {
                let b = peaks[j]
                let bt = b.time * timeScale
                if bt - at > zone { break }
                j += 1
                let bb = b.bin * binScale
                let spread = abs(bb - ab)
                guard bt - at >= Float(minimumFrameDelta) - 0.5, spread >= Float(minimumBinDelta) - 0.5,
                    spread <= Float(maximumBinDelta) + 0.5
                else { continue }
                found += 1
                body(i, at, ab, bt, bb)
            }
        }
    }

    @inline(__always)
    static func landmark(t1: Int, f1: Int, dt: Int, df: Int, anchorBin: Float) -> Landmark {
        let raw = UInt32(f1) << 13 | UInt32(df + 64) << 6 | UInt32(dt)
        let fine = UInt8(max(0, min(15, Int((anchorBin - (Float(f1) - 0.5)) * 16))))
        return Landmark(key: mix(raw), frame: Int32(t1), fineBin: fine)
    }

    /// Bits of the pair hash before `mix`: anchor bin 8, bin step 7, frame step 6.
    public static let pairKeyBits = 21

    /// Spreads the 21-bit pair hash over 32 bits (a bijection: odd multiplier modulo 2³²) so the
    /// catalog's bucket directory, indexed by the top bits, is evenly filled.
    @inline(__always)
    public static func mix(_ raw: UInt32) -> UInt32 { raw &* 0x9E37_79B1 }

    /// The anchor frequency (in bins) that a key and its 4-bit fine position stand for.
    @inline(__always)
    public static func anchorBin(key: UInt32, fineBin: UInt8) -> Float {
        let raw = key &* 0x0E8B_2F51  // modular inverse of the mix multiplier
        return Float(raw >> 13) - 0.5 + (Float(fineBin) + 0.5) / 16
    }
}
