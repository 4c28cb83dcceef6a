import RealModule
import FFTW
import FoundationEssentials

/// Turns a stream of mono samples at the analysis rate into power spectra, one per hop.
///
/// Holds one FFT plan and a window made once; `process` never allocates.
final class SpectralAnalyzer {
    let fft: RealFFT
    private let window: [Float]
    /// Samples not yet consumed by a full frame (a sliding window of `fftSize`).
    private var pending: [Float]
    private var pendingCount = 0

    init() {
        let n = FingerprintParameters.fftSize
        fft = RealFFT(size: n)
        window = (0..<n).map { i in
            // Hann window: low side lobes keep loud peaks from masking quiet neighbours.
            let x = Float(i) / Float(n)
            return 0.5 - 0.5 * Float.cos(2 * Float.pi * x)
        }
        pending = [Float](repeating: 0, count: n)
    }

    /// Feeds samples; for every completed frame calls `frame` with the power spectrum of the bins
    /// `minimumBin - lowGuardBins ..< maximumBin + highGuardBins`.
    func process(_ samples: UnsafeBufferPointer<Float>, frame: (UnsafeBufferPointer<Float>) -> Void) {
        let n = FingerprintParameters.fftSize
        let hop = FingerprintParameters.hopSize
        var index = 0
        while index < samples.count {
            let take = min(n - pendingCount, samples.count - index)
            pending.withUnsafeMutableBufferPointer { p in
                for k in 0..<take { p[pendingCount + k] = samples[index + k] }
            }
            pendingCount += take
            index += take
            if pendingCount == n {
                emit(frame)
                // Slide by one hop.
                pending.withUnsafeMutableBufferPointer { p in
                    for k in 0..<(n - hop) { p[k] = p[k + hop] }
                }
                pendingCount = n - hop
            }
        }
    }

    private func emit(_ frame: (UnsafeBufferPointer<Float>) -> Void) {
        let n = FingerprintParameters.fftSize
        let input = fft.input
        pending.withUnsafeBufferPointer { p in
            window.withUnsafeBufferPointer { w in
                for k in 0..<n { input[k] = p[k] * w[k] }
            }
        }
        fft.execute()
        // Power into the input buffer, which the FFT has done with: saves a buffer and stays allocation-free.
        let lo = FingerprintParameters.minimumBin - FingerprintParameters.lowGuardBins
        let hi = FingerprintParameters.maximumBin + FingerprintParameters.highGuardBins
        let out = fft.output
        for k in lo..<hi {
            let re = out[2 * k], im = out[2 * k + 1]
            input[k - lo] = re * re + im * im
        }
        frame(UnsafeBufferPointer(rebasing: input[0..<(hi - lo)]))
    }
}

