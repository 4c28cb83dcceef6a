import Foundation
import Testing

@testable import EarshotCore

struct PeakPickerTests {
    /// Straightforward O(area) definition of a peak, to check the streaming van Herk version.
    private func bruteForcePeaks(_ spectra: [[Float]]) -> Set<[Int]> {
        let bins = FingerprintParameters.maximumBin - FingerprintParameters.minimumBin
        let guardLow = FingerprintParameters.lowGuardBins
        let row = spectra[0].count
        let tr = FingerprintParameters.peakFrameRadius
        var found = Set<[Int]>()
        for c in 0..<spectra.count {
            for k in 0..<bins {
                let v = spectra[c][k + guardLow]
                let bin = k + FingerprintParameters.minimumBin
                let r = FingerprintParameters.peakBinRadii.last { $0.firstBin <= bin }!.radius
                guard v > FingerprintParameters.powerFloor else { continue }
                var isPeak = true
                for t in max(0, c - tr)...min(spectra.count - 1, c + tr) {
                    for j in max(-guardLow, k - r)...min(row - guardLow - 1, k + r) where !(t == c && j == k) {
                        let o = spectra[t][j + guardLow]
                        if t == c ? o > v : (t < c ? o > v : o >= v) { isPeak = false }
                    }
                }
                if isPeak { found.insert([c, k + FingerprintParameters.minimumBin]) }
            }
        }
        return found
    }

    @Test func streamingPickerEqualsBruteForce() {
        var rng = SystemRandomNumberGenerator()
        let bins = FingerprintParameters.analysedBinCount
        let spectra = (0..<120).map { _ in (0..<bins).map { _ in Float.random(in: 0.001...1, using: &rng) } }
        var picker = PeakPicker()
        var peaks: [Peak] = []
        for s in spectra { s.withUnsafeBufferPointer { picker.add(spectrum: $0, peaks: &peaks) } }
        picker.finish(peaks: &peaks)
        let streamed = Set(peaks.map { [Int($0.time.rounded()), Int($0.bin.rounded())] })
        #expect(streamed == bruteForcePeaks(spectra))
        #expect(peaks.count == streamed.count)
    }

    @Test func toneGivesPeakAtItsFrequency() {
        let frequency = 1234.5
        let sr = FingerprintParameters.sampleRate
        // A tone that starts and stops, so it has one time maximum.
        var x = [Float](repeating: 0, count: Int(sr))
        for i in 4000..<6000 {
            let envelope = sin(Double.pi * Double(i - 4000) / 2000)
            x[i] = Float(0.5 * envelope * sin(2 * Double.pi * frequency * Double(i) / sr))
        }
        let f = Fingerprinter()
        f.append(x)
        let peaks = f.finish()
        let expectedBin = Float(frequency / sr * Double(FingerprintParameters.fftSize))
        let near = peaks.filter { abs($0.bin - expectedBin) < 2 }
        #expect(near.count == 1)
        #expect(abs((near.first?.bin ?? 0) - expectedBin) < 0.15)
        // Peak time: the middle of the tone, in frames (frame i is centred at i·hop + fft/2).
        let centre = (5000.0 - Double(FingerprintParameters.fftSize) / 2) / Double(FingerprintParameters.hopSize)
        #expect(abs(Double(near.first?.time ?? 0) - centre) < 1.5)
    }

    @Test func silenceGivesNoPeaks() {
        let f = Fingerprinter()
        f.append([Float](repeating: 0, count: 32000))
        #expect(f.finish().isEmpty)
    }

    @Test func vertexOffsetOfParabola() {
        // y = -(x - 0.3)²: samples at -1, 0, 1.
        let y = { (x: Float) in -(x - 0.3) * (x - 0.3) }
        #expect(abs(PeakPicker.vertexOffset(y(-1), y(0), y(1)) - 0.3) < 1e-5)
        #expect(PeakPicker.vertexOffset(1, 1, 1) == 0)
    }
}
