import EarshotCore

/// Turns PCM audio into a `Signature` (`SHSignatureGenerator`).
///
/// Accepts 16-bit or float PCM, mono or interleaved, at 8–96 kHz; the first buffer fixes the
/// format. Audio goes through the `AudioPipeline` into a `Fingerprinter` as it arrives.
public final class SignatureGenerator {
    private var format: AudioFormat?
    private var pipeline: AudioPipeline<Fingerprinter>?
    private var continuity = AudioContinuity()
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
        if let time, !time.isFinite { throw .audioDiscontinuity("buffer time \(time) is not finite") }
        var next = continuity
        if let gap = next.take(time: time, frames: buffer.frameCount, rate: buffer.format.sampleRate) {
            throw .audioDiscontinuity(gap.description)
        }
        if pipeline == nil {
            try buffer.format.validate()
            pipeline = try AudioPipeline(inputRate: buffer.format.sampleRate, sink: Fingerprinter())
            format = buffer.format
        }
        try pipeline!.append(buffer)
        continuity = next
        inputFrames += buffer.frameCount
    }

    /// The signature of the audio appended so far. Throws `signatureInvalid` when nothing was
    /// appended or the audio holds no peaks (silence).
    public func signature() throws(EarshotError) -> Signature {
        guard let pipeline, duration > 0 else { throw .signatureInvalid("no audio was appended") }
        return try Signature(duration: duration, peaks: pipeline.sink.currentPeaks())
    }
}

extension SignatureGenerator {
    /// The signature of a whole audio file (`SHSignatureGenerator.signature(from:)`), decoded in
    /// blocks so long recordings never sit in memory whole. `progress` receives the fraction done
    /// (0…1) after each block when the file's length is known.
    public static func signature(ofFile path: String, progress: ((Double) -> Void)? = nil) throws(EarshotError) -> Signature {
        // A codec that decodes straight to the analysis rate and mono (Opus) saves the resampler.
        let analysis = AudioFormat(sampleType: .float32, sampleRate: FingerprintParameters.sampleRate, channelCount: 1)
        let reader = try AudioFileReader(path: path, preferring: analysis)
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
