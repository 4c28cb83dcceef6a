import Foundation

/// Deterministic degradations of mono audio for tests and the benchmark: noise, band limits,
/// speed changes and room reverberation.
public enum Degradations {
    /// Adds white Gaussian noise at `snr` dB relative to the signal's mean power.
    public static func addWhiteNoise(_ x: [Float], snr: Double, seed: UInt64) -> [Float] {
        var rng = SeededRandom(seed: seed)
        let power = x.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(1, x.count))
        let sigma = (power / pow(10, snr / 10)).squareRoot()
        return x.map { $0 + Float(sigma * rng.gaussian()) }
    }

    /// Plays the audio `factor`× fast, pitch and tempo together (like a PAL speed-up): windowed-sinc
    /// interpolation so no aliasing is added.
    public static func changeSpeed(_ x: [Float], by factor: Double) -> [Float] {
        let outCount = Int(Double(x.count) / factor)
        let cutoff = min(1, 1 / factor) * 0.95
        let taps = 16
        var out = [Float](repeating: 0, count: outCount)
        x.withUnsafeBufferPointer { input in
            for n in 0..<outCount {
                let position = Double(n) * factor
                let center = Int(position)
                var acc = 0.0
                for k in (center - taps + 1)...(center + taps) where k >= 0 && k < input.count {
                    let d = position - Double(k)
                    let sinc = d == 0 ? 1 : sin(Double.pi * cutoff * d) / (Double.pi * cutoff * d)
                    let window = 0.5 + 0.5 * cos(Double.pi * d / Double(taps + 1))
                    acc += Double(input[k]) * cutoff * sinc * window
                }
                out[n] = Float(acc)
            }
        }
        return out
    }

    /// Keeps `low`…`high` Hz with 4th-order Butterworth high- and low-pass filters (telephone band).
    public static func bandPass(_ x: [Float], low: Double, high: Double, sampleRate: Double) -> [Float] {
        var y = x
        for _ in 0..<2 {
            y = Biquad.highPass(cutoff: low, sampleRate: sampleRate).run(y)
            y = Biquad.lowPass(cutoff: high, sampleRate: sampleRate).run(y)
        }
        return y
    }

    /// Convolves with a synthetic room response: exponentially decaying noise (`rt60` seconds)
    /// after a direct path, mixed `wet` of the total energy.
    public static func reverberate(_ x: [Float], rt60: Double, sampleRate: Double, seed: UInt64) -> [Float] {
        var rng = SeededRandom(seed: seed)
        let length = Int(rt60 * sampleRate)
        // Sparse reflections keep direct convolution affordable: ~1 tap per 2 ms, decaying 60 dB.
        var taps: [(Int, Float)] = [(0, 1)]
        var i = Int(0.005 * sampleRate)
        while i < length {
            let gain = pow(10, -3 * Double(i) / Double(length)) * rng.gaussian() * 0.35
            taps.append((i, Float(gain)))
            i += 1 + Int(rng.unit() * 0.004 * sampleRate)
        }
        var out = [Float](repeating: 0, count: x.count)
        out.withUnsafeMutableBufferPointer { o in
            x.withUnsafeBufferPointer { input in
                for (delay, gain) in taps {
                    var n = delay
                    while n < input.count {
                        o[n] += gain * input[n - delay]
                        n += 1
                    }
                }
            }
        }
        return out
    }
}

/// A second-order IIR section (RBJ cookbook coefficients).
struct Biquad {
    var b0, b1, b2, a1, a2: Double

    static func lowPass(cutoff: Double, sampleRate: Double) -> Biquad {
        let w = 2 * Double.pi * cutoff / sampleRate, alpha = sin(w) / (2 * 0.7071), c = cos(w)
        let a0 = 1 + alpha
        return Biquad(b0: (1 - c) / 2 / a0, b1: (1 - c) / a0, b2: (1 - c) / 2 / a0, a1: -2 * c / a0, a2: (1 - alpha) / a0)
    }

    static func highPass(cutoff: Double, sampleRate: Double) -> Biquad {
        let w = 2 * Double.pi * cutoff / sampleRate, alpha = sin(w) / (2 * 0.7071), c = cos(w)
        let a0 = 1 + alpha
        return Biquad(b0: (1 + c) / 2 / a0, b1: -(1 + c) / a0, b2: (1 + c) / 2 / a0, a1: -2 * c / a0, a2: (1 - alpha) / a0)
    }

    func run(_ x: [Float]) -> [Float] {
        var y = [Float](repeating: 0, count: x.count)
        var x1 = 0.0, x2 = 0.0, y1 = 0.0, y2 = 0.0
        for n in 0..<x.count {
            let x0 = Double(x[n])
            let y0 = b0 * x0 + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2
            y[n] = Float(y0)
            x2 = x1; x1 = x0; y2 = y1; y1 = y0
        }
        return y
    }
}
