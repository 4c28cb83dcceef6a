import EarshotCore

/// Turns a whole decoded buffer into mono samples at another rate.
public enum AudioConversion {
    /// Mixes `buffer` down to mono (the average of its channels) and resamples it to `rate` Hz,
    /// through the same `AudioPipeline` as every other audio.
    ///
    /// The result holds `round(buffer.frameCount × rate / buffer.format.sampleRate)` samples.
    /// Throws `invalidAudioFormat` if float samples are NaN or infinite, and `internalError` if
    /// `rate` is not a positive finite number.
    public static func monoSamples(from buffer: PCMBuffer, at rate: Double) throws(EarshotError) -> [Float] {
        let pipeline = try AudioPipeline(inputRate: buffer.format.sampleRate, outputRate: rate, sink: SampleCollector())
        try pipeline.append(buffer)
        pipeline.flush()
        return pipeline.sink.samples
    }
}
