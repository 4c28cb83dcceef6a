import Foundation

/// Finds spectral peaks in a stream of power spectra: points that are the maximum of their
/// neighbourhood of ±`peakBinRadius` bins × ±`peakFrameRadius` frames.
///
/// The frequency maximum of each frame is computed with the van Herk/Gil-Werman filter (three
/// comparisons per bin, whatever the radius); the time test is then made only for the few bins
/// that are frequency maxima. Frames are kept in a ring of `2·radius + 1`; nothing allocates
/// per frame except appending found peaks to the caller's array.
struct PeakPicker {
    private let binCount = FingerprintParameters.maximumBin - FingerprintParameters.minimumBin
    private let binRadius = FingerprintParameters.peakBinRadius
    private let frameRadius = FingerprintParameters.peakFrameRadius
    private var ringSize: Int { 2 * frameRadius + 1 }

    /// Power per ring slot, with one guard bin each side: `(binCount + 2) * ringSize`.
    private var power: [Float]
    /// Frequency-neighbourhood maximum per ring slot: `binCount * ringSize`.
    private var frequencyMax: [Float]
    /// Scratch for the van Herk filter: padded input, prefix and suffix maxima.
    private var padded: [Float]
    private var prefix: [Float]
    private var suffix: [Float]

    /// Frames received so far; the next frame gets this index.
    private(set) var frameCount = 0
    /// Frames already decided (all frames below this index have been examined).
    private var decidedCount = 0

    init() {
        let slots = 2 * FingerprintParameters.peakFrameRadius + 1
        let bins = FingerprintParameters.maximumBin - FingerprintParameters.minimumBin
        power = [Float](repeating: 0, count: (bins + 2) * slots)
        frequencyMax = [Float](repeating: 0, count: bins * slots)
        let paddedCount = bins + 2 * FingerprintParameters.peakBinRadius
        let window = 2 * FingerprintParameters.peakBinRadius + 1
        let blocks = (paddedCount + window - 1) / window
        padded = [Float](repeating: -.infinity, count: blocks * window)
        prefix = padded
        suffix = padded
    }

    /// Adds one power spectrum (`binCount + 2` values, guard bins included) and appends the
    /// peaks of the frame that is now fully surrounded to `peaks`.
    mutating func add(spectrum: UnsafeBufferPointer<Float>, peaks: inout [Peak]) {
        let slot = frameCount % ringSize
        let stride = binCount + 2
        power.withUnsafeMutableBufferPointer { p in
            for k in 0..<stride { p[slot * stride + k] = spectrum[k] }
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
        let window = 2 * binRadius + 1
        let rowLength = binCount + 2
        let count = padded.count
        power.withUnsafeBufferPointer { pw in
            padded.withUnsafeMutableBufferPointer { x in
                prefix.withUnsafeMutableBufferPointer { g in
                    suffix.withUnsafeMutableBufferPointer { h in
                        frequencyMax.withUnsafeMutableBufferPointer { out in
                            // Real bins sit at padded[binRadius ..< binRadius + binCount]; the rest is −∞.
                            for k in 0..<binCount { x[binRadius + k] = pw[slot * rowLength + 1 + k] }
                            var start = 0
                            while start < count {
                                var m = -Float.infinity
                                for i in start..<(start + window) { m = max(m, x[i]); g[i] = m }
                                m = -.infinity
                                for i in stride(from: start + window - 1, through: start, by: -1) {
                                    m = max(m, x[i]); h[i] = m
                                }
                                start += window
                            }
                            // Max of x[k ... k + 2r] = max(suffix[k], prefix[k + 2r]).
                            for k in 0..<binCount {
                                out[slot * binCount + k] = max(h[k], g[k + window - 1])
                            }
                        }
                    }
                }
            }
        }
    }

    private func decide(frame c: Int, peaks: inout [Peak]) {
        let stride = binCount + 2
        let slot = c % ringSize
        let first = max(0, c - frameRadius)
        let last = min(frameCount - 1, c + frameRadius)
        power.withUnsafeBufferPointer { pw in
            frequencyMax.withUnsafeBufferPointer { fm in
                for k in 0..<binCount {
                    let value = pw[slot * stride + 1 + k]
                    guard value > FingerprintParameters.powerFloor, value >= fm[slot * binCount + k] else { continue }
                    // Earlier frames may tie (≥), later ones must be strictly smaller, so a steady
                    // tone yields one peak rather than one per frame.
                    var isPeak = true
                    for t in first...last where t != c {
                        let other = fm[(t % ringSize) * binCount + k]
                        if t < c ? other > value : other >= value { isPeak = false; break }
                    }
                    guard isPeak else { continue }
                    let y0 = log(value)
                    let yl = log(max(pw[slot * stride + k], 1e-30))
                    let yr = log(max(pw[slot * stride + 2 + k], 1e-30))
                    var time = Float(c)
                    if c > 0, c + 1 < frameCount {
                        let yp = log(max(pw[((c - 1) % ringSize) * stride + 1 + k], 1e-30))
                        let yn = log(max(pw[((c + 1) % ringSize) * stride + 1 + k], 1e-30))
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
