import Foundation
import EarshotCore

/// Turns PCM audio into a `Signature` (`SHSignatureGenerator`).
///
/// Accepts 16-bit or float PCM, mono or interleaved, at 8–96 kHz; the first buffer fixes the
/// format. Audio is mixed to mono and converted to the analysis rate with soxr as it arrives.
public final class SignatureGenerator {
    private var format: AudioFormat?
    private var resampler: Resampler?
    private let fingerprinter = Fingerprinter()
    private var mono: [Float] = []
    private var converted: [Float] = []
    /// Audio-clock time of the first sample, when the caller gives times.
    private var startTime: Double?
    private var inputFrames = 0

    public init() {}

    /// Seconds of audio appended so far.
    public var duration: Double {
        guard let format else { return 0 }
        return Double(inputFrames) / format.sampleRate
    }

    /// Appends a buffer. `time` is the audio-clock time (seconds) of its first sample; when given,
    /// a gap or overlap with the audio so far of more than a millisecond throws `audioDiscontinuity`.
    public func append(_ buffer: PCMBuffer, at time: Double? = nil) throws(EarshotError) {
        if let format, format != buffer.format {
            throw .invalidAudioFormat("buffer format \(buffer.format) differs from the first buffer's \(format)")
        }
        if let time {
            guard time.isFinite else { throw .audioDiscontinuity("buffer time \(time) is not finite") }
            if let startTime, let format {
                let expected = startTime + Double(inputFrames) / format.sampleRate
                let error = time - expected
                let tolerance = max(0.001, 1 / format.sampleRate)
                if error > tolerance {
                    throw .audioDiscontinuity(String(format: "gap of %.3f s before buffer at %.3f s", error, time))
                }
                if error < -tolerance {
                    throw .audioDiscontinuity(String(format: "overlap of %.3f s at buffer time %.3f s", -error, time))
                }
            } else if format == nil {
                startTime = time
            }
        }
        if format == nil {
            format = buffer.format
            resampler = try Resampler(inputRate: buffer.format.sampleRate, outputRate: FingerprintParameters.sampleRate)
        }
        mono.removeAll(keepingCapacity: true)
        try buffer.appendMono(to: &mono)
        converted.removeAll(keepingCapacity: true)
        mono.withUnsafeBufferPointer { resampler!.process($0, into: &converted) }
        fingerprinter.append(converted)
        inputFrames += buffer.frameCount
    }

    /// The signature of the audio appended so far. Throws `signatureInvalid` when nothing was
    /// appended or the audio holds no peaks (silence).
    public func signature() throws(EarshotError) -> Signature {
        guard duration > 0 else { throw .signatureInvalid("no audio was appended") }
        return try Signature(duration: duration, peaks: fingerprinter.currentPeaks())
    }
}

extension SignatureGenerator {
    /// The signature of a whole audio file (`SHSignatureGenerator.signature(from:)`), decoded in
    /// blocks so long recordings never sit in memory whole. `progress` receives the fraction done
    /// (0…1) after each block when the file's length is known.
    public static func signature(ofFile path: String, progress: ((Double) -> Void)? = nil) throws(EarshotError) -> Signature {
        let reader = try AudioFileReader(path: path)
        let generator = SignatureGenerator()
        var done = 0
        do {
            while let block = try reader.read(maxFrames: 1 << 16) {
                try generator.append(block)
                done += block.frameCount
                if let total = reader.frameCount, total > 0 { progress?(min(1, Double(done) / Double(total))) }
            }
            return try generator.signature()
        } catch {
            throw error.message.contains(path) ? error : error.prefixed(path)
        }
    }
}
