import EarshotAudio
import EarshotCore
import EarshotTestSupport
import Testing

/// One encoded variant of a 1 kHz test tone.
struct EncodedTone: Sendable, CustomTestStringConvertible {
    let label: String
    let fileName: String
    let rate: Int
    let soxOptions: [String]
    /// How much longer than the 1 s original the decoded audio may be (MP3 adds codec delay).
    let extraDuration: ClosedRange<Double>
    /// Whether libsndfile knows the exact length up front.
    let knowsFrameCount: Bool

    var testDescription: String { label }

    static let all: [EncodedTone] = [
        EncodedTone(
            label: "WAV 16-bit", fileName: "tone.wav", rate: 44_100, soxOptions: ["-b", "16", "-e", "signed-integer"],
            extraDuration: -0.002...0.002, knowsFrameCount: true),
        EncodedTone(
            label: "WAV 24-bit 8 kHz", fileName: "tone24.wav", rate: 8_000, soxOptions: ["-b", "24"],
            extraDuration: -0.002...0.002, knowsFrameCount: true),
        EncodedTone(
            label: "WAV float", fileName: "tonef.wav", rate: 48_000, soxOptions: ["-b", "32", "-e", "floating-point"],
            extraDuration: -0.002...0.002, knowsFrameCount: true),
        EncodedTone(
            label: "FLAC", fileName: "tone.flac", rate: 32_000, soxOptions: [],
            extraDuration: -0.002...0.002, knowsFrameCount: true),
        EncodedTone(
            label: "Ogg Vorbis", fileName: "tone.ogg", rate: 44_100, soxOptions: [],
            extraDuration: -0.003...0.003, knowsFrameCount: true),
        // sox writes MP3 without a LAME/Xing header, so libsndfile cannot trim the encoder delay
        // and padding (1105 + up to 1151 samples at 44.1 kHz) and only estimates the length.
        EncodedTone(
            label: "MP3", fileName: "tone.mp3", rate: 44_100, soxOptions: [],
            extraDuration: 0...0.06, knowsFrameCount: false),
    ]
}

@Suite("AudioFileDecoder")
struct AudioFileDecoderTests {
    @Test("decodes a 1 kHz tone with the right rate, length and pitch", arguments: EncodedTone.all)
    func decodesTone(_ tone: EncodedTone) throws {
        let dir = try TemporaryDirectory()
        let path = dir.path(tone.fileName)
        try Sox.sine(to: path, rate: tone.rate, options: tone.soxOptions)

        let buffer = try AudioFileDecoder.decode(path: path)
        #expect(buffer.format == AudioFormat(sampleType: .float32, sampleRate: Double(tone.rate), channelCount: 1))
        #expect(tone.extraDuration.contains(buffer.duration - 1), "duration \(buffer.duration) s")

        guard case .float32(let samples) = buffer.samples else {
            Issue.record("expected float32 samples")
            return
        }
        let rate = Double(tone.rate)
        let middle = Signal.middle(samples, rate: rate)
        let frequency = Signal.zeroCrossingFrequency(middle, rate: rate)
        #expect(abs(frequency - 1000) < 2, "measured \(frequency) Hz")
        let amplitude = Signal.amplitude(middle, at: 1000, rate: rate)
        #expect(abs(amplitude - 0.5) < 0.03, "amplitude \(amplitude)")
        #expect(Signal.amplitude(middle, at: 1500, rate: rate) < 0.01)

        let reader = try AudioFileReader(path: path)
        #expect(reader.frameCount == (tone.knowsFrameCount ? tone.rate : nil))
    }

    @Test("keeps stereo channels apart and in order")
    func decodesStereo() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("stereo.flac")
        try Sox.sine(to: path, frequencies: [1000, 3000], rate: 44_100)

        let buffer = try AudioFileDecoder.decode(path: path)
        #expect(buffer.format.channelCount == 2)
        #expect(buffer.frameCount == 44_100)
        guard case .float32(let samples) = buffer.samples else {
            Issue.record("expected float32 samples")
            return
        }
        let left = Signal.channel(0, of: samples, channels: 2)
        let right = Signal.channel(1, of: samples, channels: 2)
        #expect(abs(Signal.zeroCrossingFrequency(left, rate: 44_100) - 1000) < 1)
        #expect(abs(Signal.zeroCrossingFrequency(right, rate: 44_100) - 3000) < 1)
    }

    @Test("streams a file in chunks that add up to the whole decode")
    func readerStreamsInChunks() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("stereo.wav")
        try Sox.sine(to: path, frequencies: [440, 660], seconds: 2, rate: 22_050)

        let reader = try AudioFileReader(path: path)
        #expect(reader.format == AudioFormat(sampleType: .float32, sampleRate: 22_050, channelCount: 2))
        #expect(reader.frameCount == 44_100)

        var streamed: [Float] = []
        var chunks = 0
        while let chunk = try reader.read(maxFrames: 1000) {
            #expect(chunk.format == reader.format)
            #expect(chunk.frameCount >= 1 && chunk.frameCount <= 1000)
            guard case .float32(let samples) = chunk.samples else { break }
            streamed += samples
            chunks += 1
        }
        #expect(chunks == 45)
        #expect(try reader.read(maxFrames: 1000) == nil, "stays at the end")

        guard case .float32(let whole) = try AudioFileDecoder.decode(path: path).samples else {
            Issue.record("expected float32 samples")
            return
        }
        #expect(streamed == whole)
    }

    @Test("hands out the audio before a truncation, then says the file is truncated")
    func readerReportsTruncationMidStream() throws {
        let dir = try TemporaryDirectory()
        let cut = try dir.cutSine("long.flac", seconds: 5, keeping: 20_000)

        let reader = try AudioFileReader(path: cut)
        var frames = 0
        do throws(EarshotError) {
            while let chunk = try reader.read(maxFrames: 1024) { frames += chunk.frameCount }
            Issue.record("a cut FLAC stream should report an error, read \(frames) frames")
        } catch {
            expectInvalidAudioFormat(error, path: cut, saying: ["truncated"])
        }
        #expect(frames > 0 && frames < 5 * 44_100)
        #expect(throws: EarshotError.self) { try reader.read(maxFrames: 1024) }
        #expect(throws: EarshotError.self) { try AudioFileDecoder.decode(path: cut) }
    }
}

/// Checks that `error` is `invalidAudioFormat` whose message names `path` and contains each of
/// `phrases` (ignoring case).
func expectInvalidAudioFormat(
    _ error: EarshotError, path: String, saying phrases: [String],
    sourceLocation: SourceLocation = #_sourceLocation
) {
    guard case .invalidAudioFormat(let message) = error else {
        Issue.record("expected invalidAudioFormat, got \(error)", sourceLocation: sourceLocation)
        return
    }
    #expect(message.contains(path), "message \"\(message)\" should name the file", sourceLocation: sourceLocation)
    for phrase in phrases {
        #expect(
            message.lowercased().contains(phrase.lowercased()), "message \"\(message)\" should say \"\(phrase)\"",
            sourceLocation: sourceLocation)
    }
}
