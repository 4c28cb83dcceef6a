import FFTW
import Foundation
import Testing

@testable import EarshotCore

/// The FFT and the spectral front end checked against a naive DFT.
struct SpectralAnalysisTests {
    private func naiveDFT(_ x: [Float]) -> [(Double, Double)] {
        let n = x.count
        return (0...(n / 2)).map { k in
            var re = 0.0, im = 0.0
            for t in 0..<n {
                let a = -2 * Double.pi * Double(k * t) / Double(n)
                re += Double(x[t]) * cos(a)
                im += Double(x[t]) * sin(a)
            }
            return (re, im)
        }
    }

    @Test(arguments: [16, 64, 1024])
    func realFFTMatchesNaiveDFT(size: Int) {
        var rng = SystemRandomNumberGenerator()
        let x = (0..<size).map { _ in Float.random(in: -1...1, using: &rng) }
        let fft = RealFFT(size: size)
        for i in 0..<size { fft.input[i] = x[i] }
        fft.execute()
        let reference = naiveDFT(x)
        for k in 0...(size / 2) {
            #expect(abs(Double(fft.output[2 * k]) - reference[k].0) < 1e-3 * Double(size))
            #expect(abs(Double(fft.output[2 * k + 1]) - reference[k].1) < 1e-3 * Double(size))
        }
    }

    @Test func analyzerPowerMatchesWindowedDFT() {
        let n = FingerprintParameters.fftSize
        var rng = SystemRandomNumberGenerator()
        let x = (0..<(n + 3 * FingerprintParameters.hopSize)).map { _ in Float.random(in: -0.5...0.5, using: &rng) }
        var frames: [[Float]] = []
        let analyzer = SpectralAnalyzer()
        x.withUnsafeBufferPointer { p in analyzer.process(p) { frames.append(Array($0)) } }
        #expect(frames.count == 4)
        let hann = (0..<n).map { 0.5 - 0.5 * cos(2 * Float.pi * Float($0) / Float(n)) }
        for (f, frame) in frames.enumerated() {
            let start = f * FingerprintParameters.hopSize
            let windowed = (0..<n).map { x[start + $0] * hann[$0] }
            let reference = naiveDFT(windowed)
            for (i, power) in frame.enumerated() {
                let k = i + FingerprintParameters.minimumBin - FingerprintParameters.lowGuardBins
                let expected = reference[k].0 * reference[k].0 + reference[k].1 * reference[k].1
                #expect(abs(Double(power) - expected) <= 1e-3 * max(1, expected))
            }
        }
    }

    @Test func analyzerIsIndependentOfBlockSize() {
        let x = (0..<20_000).map { Float(sin(Double($0) * 0.1)) }
        func frames(block: Int) -> [[Float]] {
            let a = SpectralAnalyzer()
            var out: [[Float]] = []
            var i = 0
            while i < x.count {
                let e = min(x.count, i + block)
                x[i..<e].withUnsafeBufferPointer { p in a.process(p) { out.append(Array($0)) } }
                i = e
            }
            return out
        }
        #expect(frames(block: 1) == frames(block: 20_000))
        #expect(frames(block: 333) == frames(block: 4096))
    }
}
