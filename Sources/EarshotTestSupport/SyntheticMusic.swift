import Foundation

/// Music-like test audio made from a seed: overlapping harmonic notes with attack/decay
/// envelopes and occasional noise bursts (drums). Different seeds give unrelated "recordings";
/// the same seed always gives the same samples.
public enum SyntheticMusic {
    /// `duration` seconds of mono float audio at `sampleRate`, peak about 0.5.
    public static func make(seed: UInt64, duration: Double, sampleRate: Double = 16_000) -> [Float] {
        var rng = SeededRandom(seed: seed)
        let count = Int(duration * sampleRate)
        var out = [Float](repeating: 0, count: count)
        var t = 0.0
        while t < duration {
            let noteLength = 0.12 + 0.5 * rng.unit()
            let f0 = 110 * pow(2, 4 * rng.unit())  // 110 Hz … 1.76 kHz
            let harmonics = 2 + Int(rng.unit() * 5)
            let gain = 0.2 + 0.8 * rng.unit()
            let start = Int(t * sampleRate)
            let length = min(count - start, Int(noteLength * 1.6 * sampleRate))
            if length > 0 {
                let decay = 3 + 6 * rng.unit()
                var phases = (0..<harmonics).map { _ in 2 * Double.pi * rng.unit() }
                out.withUnsafeMutableBufferPointer { o in
                    for h in 0..<harmonics {
                        let f = f0 * Double(h + 1)
                        guard f < sampleRate / 2 - 200 else { continue }
                        let amp = gain / Double(h + 1)
                        let step = 2 * Double.pi * f / sampleRate
                        var phase = phases[h]
                        for i in 0..<length {
                            let time = Double(i) / sampleRate
                            let envelope = min(1, time / 0.01) * exp(-decay * time)
                            o[start + i] += Float(amp * envelope * sin(phase))
                            phase += step
                        }
                        phases[h] = phase
                    }
                }
            }
            if rng.unit() < 0.25 {  // a drum hit: a short burst of filtered noise
                let hit = Int((t + noteLength * rng.unit()) * sampleRate)
                var previous = 0.0
                let brightness = 0.2 + 0.7 * rng.unit()
                for i in 0..<min(2400, max(0, count - hit)) {
                    let n = rng.gaussian()
                    previous = brightness * n + (1 - brightness) * previous
                    out[hit + i] += Float(0.3 * previous * exp(-Double(i) / 400))
                }
            }
            // Several voices overlap: advance by less than the note length.
            t += noteLength * (0.3 + 0.5 * rng.unit())
        }
        let peak = out.reduce(0) { max($0, abs($1)) }
        if peak > 0 { for i in 0..<count { out[i] *= 0.5 / peak } }
        return out
    }
}
