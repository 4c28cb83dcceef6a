import EarshotTestSupport
import Foundation
import Testing

/// The benchmark's room degradations do what their names say: levels as asked, noise of the
/// right colour, speech levels measured over its active frames.
@Suite struct DegradationsTests {
    static func power(_ x: [Float]) -> Double { x.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(x.count) }

    static func tone(_ count: Int, frequency: Double = 440, amplitude: Float = 0.5) -> [Float] {
        (0..<count).map { amplitude * Float(sin(2 * Double.pi * frequency * Double($0) / 16_000)) }
    }

    @Test func mixingPutsTheInterferenceAtTheAskedLevel() {
        let x = Self.tone(16_000)
        let other = Self.tone(16_000, frequency: 1234, amplitude: 0.05)
        for ratio in [-5.0, 0, 5] {
            let y = Degradations.mix(x, with: other, ratio: ratio)
            let added = zip(y, x).map { $0 - $1 }
            let measured = 10 * log10(Self.power(added) / Self.power(x))
            #expect(abs(measured - ratio) < 0.01, "asked \(ratio) dB, got \(measured)")
        }
    }

    @Test func speechIsAsLoudAsItsActivePartsNotItsPauses() {
        // Half talk, half silence: the active level is the talk's, twice the overall mean power.
        let talk = Self.tone(8000, frequency: 220) + [Float](repeating: 0, count: 8000)
        let active = Degradations.activePower(talk, sampleRate: 16_000)
        #expect(abs(active / Self.power(talk) - 2) < 0.05)
        let x = Self.tone(16_000)
        let y = Degradations.mix(x, with: talk, ratio: 0, interferencePower: active)
        let added = Array(zip(y, x).map { $0 - $1 }.prefix(8000))
        #expect(abs(10 * log10(Self.power(added) / Self.power(x))) < 0.1, "while talking, as loud as the programme")
    }

    @Test func colouredNoiseHasItsLevelAndFallsWithFrequency() {
        let x = Self.tone(64_000)
        var tilts: [Double] = []
        for color in [Degradations.NoiseColor.white, .pink, .brown] {
            let y = Degradations.addNoise(x, color: color, snr: -5, seed: 7)
            let noise = zip(y, x).map { $0 - $1 }
            let snr = 10 * log10(Self.power(x) / Self.power(noise))
            #expect(abs(snr + 5) < 0.1, "\(color): \(snr) dB")
            // Below 250 Hz (32-sample means) against the top of the band (first differences).
            let means = stride(from: 0, to: noise.count - 32, by: 32).map { i in noise[i..<(i + 32)].reduce(0, +) / 32 }
            tilts.append(10 * log10(Self.power(means) / Self.power(zip(noise.dropFirst(), noise).map { $0 - $1 })))
        }
        // White: flat (the two measures differ by 18 dB by construction); pink falls 3 dB and
        // brown 6 dB an octave, over the five octaves between the two bands.
        #expect(abs(tilts[0] + 18) < 1.5, "white \(tilts[0])")
        #expect(tilts[1] - tilts[0] > 10 && tilts[2] - tilts[1] > 10, "tilts \(tilts)")
    }
}
