/// How PCM samples are laid out in a buffer.
public struct AudioFormat: Equatable, Hashable, Sendable, CustomStringConvertible {
    /// The sample encodings accepted for PCM buffers.
    public enum SampleType: String, Sendable {
        /// Signed 16-bit integers, full scale ±32768.
        case int16
        /// 32-bit floats, full scale ±1.0.
        case float32
    }

    /// The lowest and highest sample rates accepted.
    public static let supportedSampleRates: ClosedRange<Double> = 8_000...96_000
    /// The most channels accepted in one interleaved buffer.
    public static let maximumChannelCount = 32

    public var sampleType: SampleType
    public var sampleRate: Double
    /// Number of interleaved channels (1 = mono).
    public var channelCount: Int

    public init(sampleType: SampleType, sampleRate: Double, channelCount: Int) {
        self.sampleType = sampleType
        self.sampleRate = sampleRate
        self.channelCount = channelCount
    }

    /// Throws `invalidAudioFormat` naming what is out of range.
    public func validate() throws(EarshotError) {
        guard sampleRate.isFinite, Self.supportedSampleRates.contains(sampleRate) else {
            throw .invalidAudioFormat(
                "sample rate \(sampleRate) Hz is outside the supported 8000–96000 Hz")
        }
        guard channelCount >= 1, channelCount <= Self.maximumChannelCount else {
            throw .invalidAudioFormat(
                "\(channelCount) channels is outside the supported 1–\(Self.maximumChannelCount)")
        }
    }

    public var description: String {
        "\(sampleType.rawValue) \(Int(sampleRate)) Hz \(channelCount == 1 ? "mono" : "\(channelCount) ch")"
    }
}
