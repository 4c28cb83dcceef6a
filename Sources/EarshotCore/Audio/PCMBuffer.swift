/// A block of interleaved PCM audio in one of the accepted formats.
public struct PCMBuffer: Sendable {
    /// The samples, interleaved by channel.
    public enum Samples: Sendable {
        case int16([Int16])
        case float32([Float])

        var count: Int {
            switch self {
            case .int16(let s): s.count
            case .float32(let s): s.count
            }
        }
    }

    public let format: AudioFormat
    public let samples: Samples

    /// Number of sample frames (one sample per channel each).
    public var frameCount: Int { samples.count / format.channelCount }
    /// Duration in seconds.
    public var duration: Double { Double(frameCount) / format.sampleRate }

    /// A buffer of 32-bit float samples. Throws `invalidAudioFormat` for an unsupported rate or
    /// channel count, or a sample count that is not a whole number of frames.
    public init(float32 samples: [Float], sampleRate: Double, channelCount: Int = 1) throws(EarshotError) {
        try self.init(
            format: AudioFormat(sampleType: .float32, sampleRate: sampleRate, channelCount: channelCount),
            samples: .float32(samples))
    }

    /// A buffer of 16-bit integer samples. Same rules as the float initialiser.
    public init(int16 samples: [Int16], sampleRate: Double, channelCount: Int = 1) throws(EarshotError) {
        try self.init(
            format: AudioFormat(sampleType: .int16, sampleRate: sampleRate, channelCount: channelCount),
            samples: .int16(samples))
    }

    public init(format: AudioFormat, samples: Samples) throws(EarshotError) {
        try format.validate()
        let sampleType: AudioFormat.SampleType =
            switch samples {
            case .int16: .int16
            case .float32: .float32
            }
        guard sampleType == format.sampleType else {
            throw .invalidAudioFormat("samples are \(sampleType.rawValue) but the format says \(format.sampleType.rawValue)")
        }
        guard samples.count % format.channelCount == 0 else {
            throw .invalidAudioFormat(
                "\(samples.count) samples is not a whole number of \(format.channelCount)-channel frames")
        }
        self.format = format
        self.samples = samples
    }

    /// Mixes the channels down to mono floats in [-1, 1], appending to `output`.
    /// Non-finite float samples are rejected: they would poison every later FFT frame.
    public func appendMono(to output: inout [Float]) throws(EarshotError) {
        let channels = format.channelCount
        let scale = 1 / Float(channels)
        output.reserveCapacity(output.count + frameCount)
        switch samples {
        case .int16(let s):
            let norm = scale / 32768
            s.withUnsafeBufferPointer { p in
                var i = 0
                while i < p.count {
                    var acc: Int32 = 0
                    for c in 0..<channels { acc &+= Int32(p[i + c]) }
                    output.append(Float(acc) * norm)
                    i += channels
                }
            }
        case .float32(let s):
            var bad = false
            s.withUnsafeBufferPointer { p in
                var i = 0
                while i < p.count {
                    var acc: Float = 0
                    for c in 0..<channels { acc += p[i + c] }
                    if !acc.isFinite { bad = true; acc = 0 }
                    output.append(acc * scale)
                    i += channels
                }
            }
            if bad { throw .invalidAudioFormat("float samples contain NaN or infinity") }
        }
    }
}
