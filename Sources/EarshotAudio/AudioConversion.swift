import EarshotCore

/// Turns decoded audio into what the signature generator consumes.
public enum AudioConversion {
    /// Mixes `buffer` down to mono (the average of its channels) and resamples it to `rate` Hz.
    ///
    /// The result holds `round(buffer.frameCount × rate / buffer.format.sampleRate)` samples.
    /// Throws `invalidAudioFormat` if float samples are NaN or infinite, and `internalError` if
    /// `rate` is not a positive finite number.
    public static func monoSamples(from buffer: PCMBuffer, at rate: Double) throws(EarshotError) -> [Float] {
        let resampler = try Resampler(inputRate: buffer.format.sampleRate, outputRate: rate)
        var mono: [Float] = []
        try buffer.appendMono(to: &mono)
        if buffer.format.sampleRate == rate { return mono }

        var output: [Float] = []
        let expected = (Double(mono.count) * rate / buffer.format.sampleRate).rounded(.up)
        if expected < Double(Int.max / 2) { output.reserveCapacity(Int(expected) + 16) }
        mono.withUnsafeBufferPointer { resampler.process($0, into: &output) }
        resampler.flush(into: &output)
        return output
    }
}
