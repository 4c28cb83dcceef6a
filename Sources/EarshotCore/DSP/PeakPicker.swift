import RealModule
import FoundationEssentials

/// Finds spectral peaks in a stream of power spectra: points that are the maximum of their
/// neighbourhood of ±radius bins (`peakBinRadii`, growing with frequency) × ±`peakFrameRadius` frames.
///
/// The frequency maximum of each frame is computed with the van Herk/Gil-Werman filter (three
/// comparisons per bin, whatever the radius), once per radius over the span that radius serves;
/// each bin takes the result of its region's radius. The time test is then made only for the few
/// bins that are frequency maxima. Frames are kept in a ring of `2·radius + 1`; nothing allocates
/// per frame except appending found peaks to the caller's array.
struct PeakPicker {
    /// Bins where peaks may be found (`minimumBin ..< maximumBin`).
    private let binCount = FingerprintParameters.maximumBin - FingerprintParameters.minimumBin
    /// Power values per frame: the peak bins plus the guard bins on each side.
    private let rowLength = FingerprintParameters.analysedBinCount
    private let lowGuard = FingerprintParameters.lowGuardBins
    private let frameRadius = FingerprintParameters.peakFrameRadius
    private let ringSize = 2 * FingerprintParameters.peakFrameRadius + 1
    private let maxRadius = FingerprintParameters.maximumPeakBinRadius
    /// For each radius, the peak bins (from 0) it serves.
    private let regions: [(radius: Int, bins: Range<Int>)]

    /// Power per ring slot: `rowLength * ringSize`.
    private var power: [Float]
    /// Neighbourhood maximum of each peak bin per ring slot: `binCount * ringSize`.
    private var frequencyMax: [Float]
    /// Scratch for the van Herk filter: the row padded with −∞, prefix and suffix maxima.
    private var padded: [Float]
    private var prefix: [Float]
    private var suffix: [Float]

    /// Frames received so far; the next frame gets this index.
    private(set) var frameCount = 0
    /// Frames already decided (all frames below this index have been examined).
    private var decidedCount = 0
    /// Frame that peak time 0 refers to. A long stream moves it forward (`Fingerprinter.rebase`)
    /// so peak times stay small enough for a `Float` to hold them to a fraction of a frame.
    var frameOrigin = 0

    init() {
        let radii = FingerprintParameters.peakBinRadii
        let first = FingerprintParameters.minimumBin
        regions = radii.indices.map { i in
            let lo = max(radii[i].firstBin, first) - first
            let hi = (i + 1 < radii.count ? radii[i + 1].firstBin : FingerprintParameters.maximumBin) - first
            return (radii[i].radius, lo..<hi)
        }
        power = [Float](repeating: 0, count: rowLength * ringSize)
        frequencyMax = [Float](repeating: 0, count: binCount * ringSize)
        let widest = 2 * maxRadius + 1
        padded = [Float](repeating: -.infinity, count: rowLength + 2 * maxRadius + widest)
        prefix = padded
        suffix = padded
    }

    /// Adds one power spectrum (`analysedBinCount` values) and appends the peaks of the frame
    /// that is now fully surrounded to `peaks`.
    mutating func add(spectrum: UnsafeBufferPointer<Float>, peaks: inout [Peak]) {
        let slot = frameCount % ringSize
        let rowLength = self.rowLength
        power.withUnsafeMutableBufferPointer { p in
            for k in 0..<rowLength { p[slot * rowLength + k] = spectrum[k] }
        }
        computeFrequencyMax(slot: slot)
        frameCount += 1
        while decidedCount + frameRadius < frameCount {
            decide(frame: decidedCount, peaks: &peaks)
            decidedCount += 1
        }
    }

    /// Decides the frames still waiting for their future neighbours, as if the audio ended here.
    mutating func finish(peaks: inout [Peak]) {
        while decidedCount < frameCount {
            decide(frame: decidedCount, peaks: &peaks)
            decidedCount += 1
        }
    }

    private mutating func computeFrequencyMax(slot: Int) {
        let rowLength = self.rowLength, binCount = self.binCount, maxRadius = self.maxRadius
        // Peak bin k sits at padded index `origin + k`.
        let origin = maxRadius + lowGuard
        let regions = self.regions
        power.withUnsafeBufferPointer { pw in
            padded.withUnsafeMutableBufferPointer { x in
                prefix.withUnsafeMutableBufferPointer { g in
                    suffix.withUnsafeMutableBufferPointer { h in
                        frequencyMax.withUnsafeMutableBufferPointer { out in
                            for j in 0..<rowLength { x[maxRadius + j] = pw[slot * rowLength + j] }
                            for (r, bins) in regions {
                                let window = 2 * r + 1
                                var start = origin + bins.lowerBound - r
                                let end = origin + bins.upperBound + r
                                while start < end {
                                    var m = -Float.infinity
                                    for i in start..<(start + window) { m = max(m, x[i]); g[i] = m }
                                    m = -.infinity
                                    for i in stride(from: start + window - 1, through: start, by: -1) {
                                        m = max(m, x[i]); h[i] = m
                                    }
                                    start += window
                                }
                                // Max of x[i - r ... i + r] = max(suffix[i - r], prefix[i + r]) for blocks
                                // aligned at the span's start.
                                for k in bins {
                                    let i = origin + k
                                    out[slot * binCount + k] = max(h[i - r], g[i + r])
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    private func decide(frame c: Int, peaks: inout [Peak]) {
        let rowLength = self.rowLength, binCount = self.binCount, lowGuard = self.lowGuard
        let slot = c % ringSize
        let first = max(0, c - frameRadius)
        let last = min(frameCount - 1, c + frameRadius)
        power.withUnsafeBufferPointer { pw in
            frequencyMax.withUnsafeBufferPointer { fm in
                for k in 0..<binCount {
                    let at = slot * rowLength + lowGuard + k
                    let value = pw[at]
                    guard value > FingerprintParameters.powerFloor, value >= fm[slot * binCount + k] else { continue }
                    // Earlier frames may tie (≥), later ones must be strictly smaller, so a steady
                    // tone yields one peak rather than one per frame.
                    var isPeak = true
                    for t in first...last where t != c {
                        let other = fm[(t % ringSize) * binCount + k]
                        if t < c ? other > value : other >= value { isPeak = false; break }
                    }
                    guard isPeak else { continue }
                    let y0 = Float.log(value)
                    let yl = Float.log(max(pw[at - 1], 1e-30))
                    let yr = Float.log(max(pw[at + 1], 1e-30))
                    var time = Float(c - frameOrigin)
                    if c > 0, c + 1 < frameCount {
                        let yp = Float.log(max(pw[((c - 1) % ringSize) * rowLength + lowGuard + k], 1e-30))
                        let yn = Float.log(max(pw[((c + 1) % ringSize) * rowLength + lowGuard + k], 1e-30))
                        time += Self.vertexOffset(yp, y0, yn)
                    }
                    let bin = Float(k + FingerprintParameters.minimumBin) + Self.vertexOffset(yl, y0, yr)
                    peaks.append(Peak(time: time, bin: bin, magnitude: y0))
                }
            }
        }
    }

    /// Offset in [-0.5, 0.5] of the vertex of the parabola through three equally spaced points.
    @inline(__always)
    static func vertexOffset(_ a: Float, _ b: Float, _ c: Float) -> Float {
        let denominator = a - 2 * b + c
        guard denominator < 0 else { return 0 }
        return max(-0.5, min(0.5, 0.5 * (a - c) / denominator))
    }
}
