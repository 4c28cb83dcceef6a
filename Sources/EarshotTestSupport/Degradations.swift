import Foundation

/// Deterministic degradations of mono audio for tests and the benchmark: noise (white, pink,
/// brown), other sounds mixed in, band limits, speed changes and room reverberation.
public enum Degradations {
    /// Adds white Gaussian noise at `snr` dB relative to the signal's mean power.
    public static func addWhiteNoise(_ x: [Float], snr: Double, seed: UInt64) -> [Float] {
        var rng = SeededRandom(seed: seed)
        let power = x.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(1, x.count))
        let sigma = (power / pow(10, snr / 10)).squareRoot()
        return x.map { $0 + Float(sigma * rng.gaussian()) }
    }

    /// The colour of added noise: white (flat), pink (power falling 3 dB per octave, like most
    /// room and fan noise) or brown (6 dB per octave: rumble, traffic, a distant hoover).
    public enum NoiseColor: Sendable {
        case white, pink, brown
    }

    /// Adds noise of `color` at `snr` dB relative to the signal's mean power.
    public static func addNoise(_ x: [Float], color: NoiseColor, snr: Double, seed: UInt64) -> [Float] {
        if color == .white { return addWhiteNoise(x, snr: snr, seed: seed) }
        var rng = SeededRandom(seed: seed)
        var noise = [Float](repeating: 0, count: x.count)
        switch color {
        case .pink:
            // Voss–McCartney: 16 random values, row k redrawn every 2^k samples, summed, plus a
            // fresh white value: a 1/f spectrum over the whole audio band.
            var rows = (0..<16).map { _ in rng.gaussian() }
            var running = rows.reduce(0, +)
            for n in 0..<x.count {
                let k = (n + 1).trailingZeroBitCount
                if k < rows.count {
                    let fresh = rng.gaussian()
                    running += fresh - rows[k]
                    rows[k] = fresh
                }
                noise[n] = Float(running + rng.gaussian())
            }
        case .brown:
            // Integrated white noise, with a slight leak so it cannot wander off (a corner near 3 Hz).
            var level = 0.0
            for n in 0..<x.count {
                level = 0.999 * level + rng.gaussian()
                noise[n] = Float(level)
            }
        case .white:
            break
        }
        return mix(x, with: noise, ratio: -snr)
    }

    /// Mean power of `x` over its active 20 ms frames: those within 40 dB of the loudest. Speech
    /// with pauses is "as loud as" a programme when its active level equals the programme's.
    public static func activePower(_ x: [Float], sampleRate: Double) -> Double {
        let frame = max(1, Int(0.02 * sampleRate))
        var powers: [Double] = []
        var i = 0
        while i + frame <= x.count {
            var sum = 0.0
            for n in i..<(i + frame) { sum += Double(x[n]) * Double(x[n]) }
            powers.append(sum / Double(frame))
            i += frame
        }
        guard let loudest = powers.max(), loudest > 0 else { return 0 }
        let active = powers.filter { $0 >= loudest * 1e-4 }
        return active.reduce(0, +) / Double(active.count)
    }

    /// Adds `interference` (cut or zero-padded to `x`'s length) scaled so that its power is
    /// `ratio` dB relative to `x`'s mean power. `interferencePower` overrides how the
    /// interference's power is measured (e.g. `activePower` for speech with pauses).
    public static func mix(_ x: [Float], with interference: [Float], ratio: Double, interferencePower: Double? = nil) -> [Float] {
        let power = x.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(1, x.count))
        let count = min(x.count, interference.count)
        let own = interferencePower ?? interference.prefix(count).reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(1, count))
        guard own > 0 else { return x }
        let gain = Float((power * pow(10, ratio / 10) / own).squareRoot())
        var y = x
        for n in 0..<count { y[n] += gain * interference[n] }
        return y
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
