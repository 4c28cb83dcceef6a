import CALSA

/// The sample encodings a capture device may deliver, by their ALSA names.
///
/// These three cover what capture hardware offers in practice: 16-bit for most codecs and USB
/// dongles, 32-bit (24 significant bits, left-aligned) for better converters, and float from
/// sound servers and software PCMs. Anything else can be converted by ALSA itself through a
/// `plughw:` or `plug` PCM.
public enum AlsaSampleFormat: String, Sendable, CaseIterable {
    /// Signed 16-bit little-endian integers.
    case s16LE = "S16_LE"
    /// 32-bit little-endian floats, full scale ±1.0.
    case floatLE = "FLOAT_LE"
    /// Signed 32-bit little-endian integers.
    case s32LE = "S32_LE"

    /// Bytes per sample of one channel.
    public var bytesPerSample: Int {
        switch self {
        case .s16LE: 2
        case .floatLE, .s32LE: 4
        }
    }

    var alsaFormat: snd_pcm_format_t {
        switch self {
        case .s16LE: SND_PCM_FORMAT_S16_LE
        case .floatLE: SND_PCM_FORMAT_FLOAT_LE
        case .s32LE: SND_PCM_FORMAT_S32_LE
        }
    }

    init?(alsaFormat: snd_pcm_format_t) {
        guard let match = Self.allCases.first(where: { $0.alsaFormat == alsaFormat }) else { return nil }
        self = match
    }

    /// Mixes `frames` interleaved frames of `channels` channels in this encoding down to mono
    /// floats in [-1, 1], written to `output` (which must have room for `frames`).
    ///
    /// Runs on the capture thread once per period, so it only reads and writes the given memory.
    /// A non-finite float sample (a broken driver or plugin) becomes 0 rather than poisoning
    /// every later FFT frame.
    func mixToMono(
        _ input: UnsafeRawPointer, frames: Int, channels: Int, into output: UnsafeMutablePointer<Float>
    ) {
        let scale = 1 / Float(channels)
        switch self {
        case .s16LE:
            let samples = input.assumingMemoryBound(to: Int16.self)
            let norm = scale / 32768
            for frame in 0..<frames {
                var sum: Int32 = 0
                for c in 0..<channels { sum &+= Int32(Int16(littleEndian: samples[frame * channels + c])) }
                output[frame] = Float(sum) * norm
            }
        case .s32LE:
            let samples = input.assumingMemoryBound(to: Int32.self)
            let norm = scale / 2_147_483_648
            for frame in 0..<frames {
                var sum: Float = 0
                for c in 0..<channels { sum += Float(Int32(littleEndian: samples[frame * channels + c])) }
                output[frame] = sum * norm
            }
        case .floatLE:
            let samples = input.assumingMemoryBound(to: UInt32.self)
            for frame in 0..<frames {
                var sum: Float = 0
                for c in 0..<channels {
                    sum += Float(bitPattern: UInt32(littleEndian: samples[frame * channels + c]))
                }
                output[frame] = sum.isFinite ? sum * scale : 0
            }
        }
    }
}
