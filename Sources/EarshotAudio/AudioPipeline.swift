import EarshotCore

/// The one road from audio to the fingerprint front end, for files (`SignatureGenerator`),
/// caller-fed streams (`Session`) and live capture (`ManagedSession`) alike: PCM buffers are
/// mixed to mono, converted to the analysis rate with soxr and handed to a `FingerprintSink`.
///
/// Its buffers are reused, so after the first blocks appending allocates nothing. Used from one
/// thread at a time.
public final class AudioPipeline<Sink: FingerprintSink> {
    /// The rate of the audio appended, in Hz.
    public let inputRate: Double
    public let sink: Sink
    private let resampler: Resampler
    private var mono: [Float] = []
    private var converted: [Float] = []

    /// A pipeline from `inputRate` Hz into `sink`, which receives `outputRate` Hz (the analysis
    /// rate; another only for tools that convert audio). Throws `internalError` for an
    /// unusable rate.
    public init(inputRate: Double, outputRate: Double = FingerprintParameters.sampleRate, sink: Sink) throws(EarshotError) {
        self.inputRate = inputRate
        self.sink = sink
        resampler = try Resampler(inputRate: inputRate, outputRate: outputRate)
        converted.reserveCapacity(16_384)
    }

    /// Appends a PCM buffer at `inputRate`, any channel count. Throws `invalidAudioFormat` for
    /// another rate or for NaN/infinite float samples (nothing of that buffer is appended).
    public func append(_ buffer: PCMBuffer) throws(EarshotError) {
        guard buffer.format.sampleRate == inputRate else {
            throw .invalidAudioFormat("buffer rate \(buffer.format.sampleRate) Hz differs from the stream's \(inputRate) Hz")
        }
        mono.removeAll(keepingCapacity: true)
        try buffer.appendMono(to: &mono)
        mono.withUnsafeBufferPointer { appendMono($0) }
    }

    /// Appends mono samples at `inputRate` (what capture delivers).
    public func appendMono(_ samples: UnsafeBufferPointer<Float>) {
        converted.removeAll(keepingCapacity: true)
        resampler.process(samples, into: &converted)
        converted.withUnsafeBufferPointer { sink.append($0) }
    }

    /// Ends the signal: soxr's last samples go to the sink, so the sink has received exactly
    /// `round(inputCount × outputRate / inputRate)` samples. For whole signals only (a file
    /// converted at once); the pipeline then starts a new signal.
    public func flush() {
        converted.removeAll(keepingCapacity: true)
        resampler.flush(into: &converted)
        converted.withUnsafeBufferPointer { sink.append($0) }
    }
}

/// A sink that keeps every sample it receives.
public final class SampleCollector: FingerprintSink {
    public private(set) var samples: [Float] = []

    public init() {}

    public func append(_ samples: UnsafeBufferPointer<Float>) {
        self.samples.append(contentsOf: samples)
    }
}
