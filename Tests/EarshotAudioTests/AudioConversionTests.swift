import EarshotAudio
import EarshotCore
import EarshotTestSupport
import Testing

@Suite("AudioConversion")
struct AudioConversionTests {
    @Test("mixes a stereo file to the average of its channels")
    func mixesStereoFile() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("stereo.wav")
        try Sox.sine(to: path, frequencies: [1000, 3000], rate: 44_100, options: ["-b", "32", "-e", "floating-point"])
        let buffer = try AudioFileDecoder.decode(path: path)
        guard case .float32(let samples) = buffer.samples else {
            Issue.record("expected float32 samples")
            return
        }

        // At the file's own rate the result is exactly the per-frame average.
        let mono = try AudioConversion.monoSamples(from: buffer, at: 44_100)
        let left = Signal.channel(0, of: samples, channels: 2)
        let right = Signal.channel(1, of: samples, channels: 2)
        #expect(mono.count == 44_100)
        let difference = zip(mono, zip(left, right)).map { abs($0 - ($1.0 + $1.1) / 2) }.max() ?? 1
        #expect(difference < 1e-6)

        // At 16 kHz both tones survive at half level.
        let mono16k = try AudioConversion.monoSamples(from: buffer, at: 16_000)
        #expect(abs(mono16k.count - 16_000) <= 2)
        let middle = Signal.middle(mono16k, rate: 16_000)
        #expect(abs(Signal.amplitude(middle, at: 1000, rate: 16_000) - 0.25) < 0.01)
        #expect(abs(Signal.amplitude(middle, at: 3000, rate: 16_000) - 0.25) < 0.01)
    }

    @Test("channels in opposite phase cancel in the mix")
    func oppositePhasesCancel() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("antiphase.wav")
        try Sox.sine(
            to: path, frequencies: [1000, 1000], phases: [0, 50], rate: 48_000,
            options: ["-b", "32", "-e", "floating-point"])
        let buffer = try AudioFileDecoder.decode(path: path)
        guard case .float32(let samples) = buffer.samples else {
            Issue.record("expected float32 samples")
            return
        }
        #expect(abs(Signal.rms(Signal.channel(0, of: samples, channels: 2)) - 0.3536) < 0.01)
        let mono = try AudioConversion.monoSamples(from: buffer, at: 16_000)
        #expect(Signal.rms(mono) < 1e-3)
    }

    @Test("resamples a mono file to 16 kHz keeping pitch and length", arguments: [8_000, 44_100])
    func resamplesMonoFile(rate: Int) throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("tone.wav")
        try Sox.sine(to: path, seconds: 3, rate: rate)
        let mono = try AudioConversion.monoSamples(from: try AudioFileDecoder.decode(path: path), at: 16_000)
        #expect(abs(mono.count - 48_000) <= 2)
        let frequency = Signal.zeroCrossingFrequency(Signal.middle(mono, rate: 16_000), rate: 16_000)
        #expect(abs(frequency - 1000) < 0.5, "measured \(frequency) Hz")
    }

    @Test("takes 16-bit integer buffers too")
    func int16Buffer() throws {
        let tone = Signal.sine(frequency: 1000, rate: 8_000, count: 8_000)
        // The same tone on both channels, so the mix keeps its level.
        let interleaved = tone.flatMap { [Int16($0 * 32767), Int16($0 * 32767)] }
        let buffer = try PCMBuffer(int16: interleaved, sampleRate: 8_000, channelCount: 2)
        let mono = try AudioConversion.monoSamples(from: buffer, at: 16_000)
        #expect(abs(mono.count - 16_000) <= 2)
        let middle = Signal.middle(mono, rate: 16_000)
        #expect(abs(Signal.amplitude(middle, at: 1000, rate: 16_000) - 0.5) < 0.01)
    }

    @Test("rejects NaN samples")
    func rejectsNaN() throws {
        let buffer = try PCMBuffer(float32: [0, .nan, 0, 0], sampleRate: 16_000)
        #expect(throws: EarshotError.self) { try AudioConversion.monoSamples(from: buffer, at: 16_000) }
    }
}
