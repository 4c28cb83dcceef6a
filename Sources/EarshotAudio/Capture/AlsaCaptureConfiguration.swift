import EarshotCore
import EarshotSystem

/// What to ask of a capture device. The device may give something else (another rate, two
/// channels instead of one, another period); `AlsaCaptureParameters` says what was agreed.
public struct AlsaCaptureConfiguration: Sendable, Equatable {
    /// Any ALSA PCM name: `default`, `hw:1,0`, `plughw:CARD=Device,DEV=0`, or a PCM defined in
    /// an asoundrc.
    public var device: String
    /// The rate to ask for, in Hz. 16 kHz is what fingerprinting uses, so a device (or a `plug`
    /// PCM) that can give it saves a resampling step; any rate from 8 to 96 kHz is accepted.
    public var sampleRate: Int
    /// Channels to ask for, 1 or 2; they are mixed to mono.
    public var channelCount: Int
    /// The wanted period (the block the device delivers at a time), in seconds. 20 ms keeps the
    /// latency low without waking the capture thread more than 50 times a second.
    public var periodDuration: Double
    /// The device buffer, in periods. Four periods (80 ms) ride out a late wake-up of the
    /// capture thread without an overrun.
    public var periodsPerBuffer: Int
    /// Accepted sample encodings, most preferred first.
    public var sampleFormats: [AlsaSampleFormat]

    public init(
        device: String = "default", sampleRate: Int = 16_000, channelCount: Int = 1,
        periodDuration: Double = 0.02, periodsPerBuffer: Int = 4,
        sampleFormats: [AlsaSampleFormat] = [.s16LE, .floatLE, .s32LE]
    ) {
        self.device = device
        self.sampleRate = sampleRate
        self.channelCount = channelCount
        self.periodDuration = periodDuration
        self.periodsPerBuffer = periodsPerBuffer
        self.sampleFormats = sampleFormats
    }

    /// Throws `invalidAudioFormat` naming the first setting out of range.
    func validate() throws(EarshotError) {
        let name = "ALSA device \"\(device)\""
        do throws(SystemError) { try CString.check(device, as: "device name") } catch { throw .invalidAudioFormat("ALSA: \(error.message)") }
        guard AudioFormat.supportedSampleRates.contains(Double(sampleRate)) else {
            throw .invalidAudioFormat("\(name): sample rate \(sampleRate) Hz is outside the supported 8000–96000 Hz")
        }
        guard (1...2).contains(channelCount) else {
            throw .invalidAudioFormat("\(name): \(channelCount) channels requested; capture takes 1 or 2")
        }
        guard periodDuration.isFinite, periodDuration >= 0.001, periodDuration <= 1 else {
            throw .invalidAudioFormat("\(name): period of \(periodDuration) s is outside 0.001–1 s")
        }
        guard (2...64).contains(periodsPerBuffer) else {
            throw .invalidAudioFormat("\(name): \(periodsPerBuffer) periods per buffer is outside 2–64")
        }
        guard !sampleFormats.isEmpty else {
            throw .invalidAudioFormat("\(name): no sample format is allowed")
        }
    }
}

/// What a capture device agreed to deliver.
public struct AlsaCaptureParameters: Sendable, Equatable, CustomStringConvertible {
    /// The PCM name it was opened with.
    public var device: String
    public var sampleFormat: AlsaSampleFormat
    /// In Hz; the device's own rate, which may differ from the one asked for.
    public var sampleRate: Int
    public var channelCount: Int
    /// Frames the device delivers per period.
    public var periodFrames: Int
    /// Frames the device buffer holds.
    public var bufferFrames: Int

    public var periodDuration: Double { Double(periodFrames) / Double(sampleRate) }
    public var bufferDuration: Double { Double(bufferFrames) / Double(sampleRate) }

    /// The format of the samples the capture hands on: mono 32-bit floats at the device's rate.
    public var outputFormat: AudioFormat {
        AudioFormat(sampleType: .float32, sampleRate: Double(sampleRate), channelCount: 1)
    }

    public var description: String {
        let channels = channelCount == 1 ? "mono" : "\(channelCount) ch"
        let period = (periodDuration * 1000 * 10).rounded() / 10
        let buffer = (bufferDuration * 1000 * 10).rounded() / 10
        return "\(device): \(sampleFormat.rawValue) \(sampleRate) Hz \(channels), "
            + "period \(periodFrames) frames (\(period) ms), buffer \(bufferFrames) frames (\(buffer) ms)"
    }
}
