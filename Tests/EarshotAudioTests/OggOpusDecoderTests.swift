import CSndfile
import EarshotCore
import EarshotSystem
import EarshotTestSupport
import Foundation
import Testing

@testable import EarshotAudio

/// Ogg Opus files written by libsndfile (which encodes with libopus), and libsndfile's own
/// decoding of them as the reference ours must agree with.
enum OpusFiles {
    /// One tone per channel, amplitude 0.5, at 48 kHz.
    static func write(_ path: String, frequencies: [Double], seconds: Double) throws {
        let rate = 48_000, channels = frequencies.count
        var info = SF_INFO()
        info.samplerate = Int32(rate)
        info.channels = Int32(channels)
        info.format = Int32(SF_FORMAT_OGG | SF_FORMAT_OPUS)
        let file = try #require(sf_open(path, Int32(SFM_WRITE), &info), "libsndfile cannot write Ogg Opus: \(String(cString: sf_strerror(nil)))")
        defer { sf_close(file) }
        let frames = Int(seconds * Double(rate))
        var pcm = [Float](repeating: 0, count: frames * channels)
        for n in 0..<frames {
            for (c, f) in frequencies.enumerated() { pcm[n * channels + c] = Float(0.5 * sin(2 * .pi * f * Double(n) / Double(rate))) }
        }
        #expect(sf_writef_float(file, pcm, sf_count_t(frames)) == sf_count_t(frames))
    }

    /// libsndfile's decoding: interleaved samples at 48 kHz and the channel count.
    static func libsndfileDecode(_ path: String) throws -> (samples: [Float], channels: Int) {
        var info = SF_INFO()
        let file = try #require(sf_open(path, Int32(SFM_READ), &info))
        defer { sf_close(file) }
        #expect(info.samplerate == 48_000)
        var samples = [Float](repeating: 0, count: Int(info.frames) * Int(info.channels))
        let read = sf_readf_float(file, &samples, info.frames)
        #expect(read == info.frames)
        return (samples, Int(info.channels))
    }

    /// Everything `reader` delivers, in chunks of `chunk` frames.
    static func readAll(_ reader: AudioFileReader, chunk: Int = 4800) throws -> [Float] {
        var out: [Float] = []
        while let block = try reader.read(maxFrames: chunk) {
            guard case .float32(let samples) = block.samples else { break }
            out += samples
        }
        return out
    }
}

@Suite("OggOpusDecoder")
struct OggOpusDecoderTests {
    @Test("decodes Ogg Opus as libsndfile does: same length, same samples (pre-skip and end trimmed alike)")
    func agreesWithLibsndfile() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("tones.opus")
        try OpusFiles.write(path, frequencies: [1000, 3000], seconds: 1.3)
        let reference = try OpusFiles.libsndfileDecode(path)

        // The file goes to our decoder, not libsndfile.
        let file = try MappedFile(path: path)
        #expect(OggOpusDecoder(file: file, rate: nil, channels: nil) != nil)

        let reader = try AudioFileReader(path: path)
        #expect(reader.format == AudioFormat(sampleType: .float32, sampleRate: 48_000, channelCount: 2))
        #expect(reader.frameCount == reference.samples.count / 2)
        #expect(reader.frameCount == 62_400, "1.3 s at 48 kHz")
        let ours = try OpusFiles.readAll(reader, chunk: 1000)
        #expect(ours.count == reference.samples.count)
        let worst = zip(ours, reference.samples).map { abs($0 - $1) }.max() ?? 1
        #expect(worst < 1e-6, "largest difference \(worst)")
    }

    @Test("decodes straight to 16 kHz mono when asked, with the tones where they belong")
    func decodesToTheAnalysisFormat() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("tones.opus")
        try OpusFiles.write(path, frequencies: [1000, 3000], seconds: 1)
        let analysis = AudioFormat(sampleType: .float32, sampleRate: 16_000, channelCount: 1)
        let reader = try AudioFileReader(path: path, preferring: analysis)
        #expect(reader.format == analysis)
        #expect(reader.frameCount == 16_000)
        let mono = try OpusFiles.readAll(reader)
        #expect(mono.count == 16_000)
        let middle = Signal.middle(mono, rate: 16_000)
        // The two channels' tones, each at half their amplitude in the mix.
        #expect(abs(Signal.amplitude(middle, at: 1000, rate: 16_000) - 0.25) < 0.03)
        #expect(abs(Signal.amplitude(middle, at: 3000, rate: 16_000) - 0.25) < 0.03)
        #expect(Signal.amplitude(middle, at: 2000, rate: 16_000) < 0.01)

        // A rate Opus does not decode at is not offered: the file's 48 kHz comes instead.
        let other = try AudioFileReader(path: path, preferring: AudioFormat(sampleType: .float32, sampleRate: 44_100, channelCount: 1))
        #expect(other.format == AudioFormat(sampleType: .float32, sampleRate: 48_000, channelCount: 1))
        // Formats without such a decoder ignore the preference.
        let wav = dir.path("tone.wav")
        try Sox.sine(to: wav, rate: 44_100)
        #expect(try AudioFileReader(path: wav, preferring: analysis).format.sampleRate == 44_100)
    }

    @Test("applies the output gain the header asks for")
    func outputGain() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("tone.opus")
        try OpusFiles.write(path, frequencies: [1000], seconds: 1)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        // OpusHead starts after the first page's 27-byte header and 1 lacing value; its gain is
        // a Q7.8 dB value at byte 16. +6.02 dB doubles the amplitude.
        #expect(Array(bytes[28..<36]) == Array("OpusHead".utf8))
        let gain = Int16(6.0206 * 256)
        bytes[28 + 16] = UInt8(truncatingIfNeeded: gain)
        bytes[28 + 17] = UInt8(truncatingIfNeeded: gain >> 8)
        let firstPage = 27 + 1 + Int(bytes[27])
        let crc = bytes.withUnsafeBytes { OggChecksum.of($0, 0..<firstPage, zeroing: 22..<26) }
        bytes.replaceSubrange(22..<26, with: withUnsafeBytes(of: crc.littleEndian, Array.init))
        let louder = try dir.write("louder.opus", bytes)

        let plain = try OpusFiles.readAll(AudioFileReader(path: path))
        let loud = try OpusFiles.readAll(AudioFileReader(path: louder))
        #expect(plain.count == loud.count)
        let ratio = Signal.rms(loud) / Signal.rms(plain)
        #expect(abs(ratio - 2) < 0.01, "gain ratio \(ratio)")
    }

    @Test("a damaged page: the audio before it, then an error naming the file and the byte")
    func damagedPage() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("long.opus")
        try OpusFiles.write(path, frequencies: [440], seconds: 5)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[bytes.count * 6 / 10] ^= 0x10
        let damaged = try dir.write("damaged.opus", bytes)

        let reader = try AudioFileReader(path: damaged)
        #expect(reader.frameCount == 240_000, "the last page is intact, so the length is known")
        var frames = 0
        do throws(EarshotError) {
            while let block = try reader.read(maxFrames: 4800) { frames += block.frameCount }
            Issue.record("a damaged page should be an error; read \(frames) frames")
        } catch {
            expectInvalidAudioFormat(error, path: damaged, saying: ["truncated or corrupt", "fails its checksum", "Ogg page at byte"])
        }
        #expect(frames > 48_000 && frames < 240_000)
        #expect(throws: EarshotError.self) { try reader.read(maxFrames: 4800) }
        #expect(throws: EarshotError.self) { try SignatureGenerator.signature(ofFile: damaged) }
    }

    @Test("a file cut inside a page: length unknown, the audio before the cut, then an error")
    func cutFile() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("long.opus")
        try OpusFiles.write(path, frequencies: [440], seconds: 5)
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as! Int
        let cut = try dir.truncatedCopy(of: path, keeping: size * 7 / 10, to: "cut.opus")

        let reader = try AudioFileReader(path: cut, preferring: AudioFormat(sampleType: .float32, sampleRate: 16_000, channelCount: 1))
        #expect(reader.frameCount == nil)
        var frames = 0
        do throws(EarshotError) {
            while let block = try reader.read(maxFrames: 1600) { frames += block.frameCount }
            Issue.record("a cut file should be an error; read \(frames) frames")
        } catch {
            expectInvalidAudioFormat(error, path: cut, saying: ["truncated", "ends inside the Ogg page"])
        }
        #expect(frames > 16_000 && frames < 80_000)
    }

    @Test("an Ogg file of another codec, or Opus of more than two channels, stays with libsndfile")
    func othersStayWithLibsndfile() throws {
        let dir = try TemporaryDirectory()
        let vorbis = dir.path("tone.ogg")
        try Sox.sine(to: vorbis, rate: 44_100)
        #expect(OggOpusDecoder(file: try MappedFile(path: vorbis), rate: 16_000, channels: 1) == nil)
        #expect(try AudioFileReader(path: vorbis, preferring: AudioFormat(sampleType: .float32, sampleRate: 16_000, channelCount: 1))
            .format == AudioFormat(sampleType: .float32, sampleRate: 44_100, channelCount: 1))

        let surround = dir.path("three.opus")
        try OpusFiles.write(surround, frequencies: [500, 1000, 2000], seconds: 1)
        #expect(OggOpusDecoder(file: try MappedFile(path: surround), rate: nil, channels: nil) == nil)
        let reader = try AudioFileReader(path: surround)
        #expect(reader.format.channelCount == 3)
        #expect(try OpusFiles.readAll(reader).count == 3 * 48_000)
    }
}

/// Ogg Opus files put together page by page from the packets of a real one, to make the
/// streams real encoders rarely write.
struct OpusStream {
    var head: [UInt8]
    var tags: [UInt8]
    /// 20 ms each (libsndfile's encoder frame).
    var audio: [[UInt8]]
    /// The last page's granule position: the pre-skip and the 1 s of audio, less than all the
    /// packets hold (the last is padded).
    var endGranule: Int64

    /// The packets of a 1 s tone that libsndfile wrote.
    init(in dir: TemporaryDirectory) throws {
        let path = dir.path("source.opus")
        try OpusFiles.write(path, frequencies: [1000], seconds: 1)
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let packets = try OggPages.packets(in: bytes)
        endGranule = try #require(try bytes.withUnsafeBytes { try OggPacketReader(bytes: $0).lastGranulePosition() }).position
        head = packets[0]
        tags = packets[1]
        audio = Array(packets[2...])
    }

    /// The file: head and tags pages, then `perPage` audio packets to a page, granule positions
    /// counted from `start`; the last page ends the stream with `lastGranule` if given.
    func file(serial: UInt32 = 7, perPage: Int = 10, start: Int64 = 0, lastGranule: Int64? = nil, audio: [[UInt8]]? = nil) -> [UInt8] {
        let audio = audio ?? self.audio
        var bytes = OggPages.page([head], serial: serial, flags: 0x02)
        bytes += OggPages.page([tags], serial: serial, sequence: 1)
        var granule = start
        var sequence: UInt32 = 2
        var i = 0
        while i < audio.count {
            let chunk = Array(audio[i..<min(audio.count, i + perPage)])
            granule += Int64(chunk.filter { !$0.isEmpty }.count * 960)
            i += chunk.count
            let last = i >= audio.count
            bytes += OggPages.page(chunk, serial: serial, sequence: sequence, granule: last ? (lastGranule ?? start + endGranule) : granule,
                                   flags: last ? 0x04 : 0)
            sequence += 1
        }
        return bytes
    }
}

@Suite("OggOpusDecoder, unusual streams")
struct OggOpusStreamTests {
    /// Frames `AudioFileReader` reports and delivers for `bytes`.
    static func decode(_ bytes: [UInt8], in dir: TemporaryDirectory, name: String = "x.opus") throws -> (count: Int?, delivered: Int) {
        let path = try dir.write(name, bytes)
        let reader = try AudioFileReader(path: path)
        return (reader.frameCount, try OpusFiles.readAll(reader).count / reader.format.channelCount)
    }

    @Test("put back together page by page, a stream decodes as the original did")
    func reassembled() throws {
        let dir = try TemporaryDirectory()
        let stream = try OpusStream(in: dir)
        // 50 packets of 20 ms plus the pre-skip's worth: the encoder's granule positions.
        let original = try Self.decode(stream.file(), in: dir)
        #expect(original.count == 48_000 && original.delivered == 48_000)
    }

    @Test("a stream that starts an hour in has the length of its audio")
    func lateStart() throws {
        let dir = try TemporaryDirectory()
        let stream = try OpusStream(in: dir)
        let late = try Self.decode(stream.file(start: 3600 * 48_000), in: dir)
        #expect(late.count == 48_000 && late.delivered == 48_000)
    }

    @Test("bytes after the last page (a tag, a second link) leave the length and the trimming alone")
    func trailingBytes() throws {
        let dir = try TemporaryDirectory()
        let stream = try OpusStream(in: dir)
        let tagged = try Self.decode(stream.file() + Array("TAG".utf8) + [UInt8](repeating: 0x20, count: 125), in: dir, name: "tag.opus")
        #expect(tagged.count == 48_000 && tagged.delivered == 48_000)
        let chained = try Self.decode(stream.file() + stream.file(serial: 8), in: dir, name: "chained.opus")
        #expect(chained.count == 48_000 && chained.delivered == 48_000, "the first link only")
    }

    @Test("a granule position no file could have is not believed, and does not crash")
    func absurdGranule() throws {
        let dir = try TemporaryDirectory()
        let stream = try OpusStream(in: dir)
        let absurd = try Self.decode(stream.file(lastGranule: .max), in: dir)
        #expect(absurd.count == nil)
        #expect(absurd.delivered >= 48_000, "every packet decoded, untrimmed")
    }

    @Test("empty packets are passed over, not turned into made-up audio")
    func emptyPackets() throws {
        let dir = try TemporaryDirectory()
        let stream = try OpusStream(in: dir)
        var audio = stream.audio
        audio.insert(contentsOf: [[UInt8]](repeating: [], count: 200), at: 25)
        let padded = try Self.decode(stream.file(perPage: 50, audio: audio), in: dir)
        #expect(padded.count == 48_000 && padded.delivered == 48_000)
        // Without an end to trim at (an unbelievable last granule), what is decoded shows it.
        let plain = try Self.decode(stream.file(lastGranule: .max), in: dir, name: "plain.opus")
        let untrimmed = try Self.decode(stream.file(perPage: 50, lastGranule: .max, audio: audio), in: dir, name: "untrimmed.opus")
        #expect(untrimmed.delivered == plain.delivered)
    }

    @Test("a packet longer than Opus allows is an error, not a crash")
    func oversizedPacket() throws {
        let dir = try TemporaryDirectory()
        let stream = try OpusStream(in: dir)
        let huge = [UInt8](repeating: 0x55, count: 255 * 260)
        var bytes = OggPages.page([stream.head], flags: 0x02) + OggPages.page([stream.tags], sequence: 1)
        bytes += OggPages.page([stream.audio[0]], sequence: 2, granule: 960)
        bytes += OggPages.page([Array(huge[0..<(255 * 255)])], sequence: 3, open: true)
        bytes += OggPages.page([Array(huge[(255 * 255)...])], sequence: 4, granule: 3 * 960, flags: 0x01 | 0x04)
        let path = try dir.write("huge.opus", bytes)
        #expect(throws: EarshotError.self) { try OpusFiles.readAll(AudioFileReader(path: path)) }
        do { _ = try OpusFiles.readAll(AudioFileReader(path: path)) } catch let error as EarshotError {
            expectInvalidAudioFormat(error, path: path, saying: ["more than an Opus packet may hold"])
        }
    }

    @Test("headers and no audio: the same error libsndfile gives such a file")
    func headersOnly() throws {
        let dir = try TemporaryDirectory()
        let stream = try OpusStream(in: dir)
        let bytes = OggPages.page([stream.head], flags: 0x02) + OggPages.page([stream.tags], sequence: 1, flags: 0x04)
        let path = try dir.write("empty.opus", bytes)
        do {
            let reader = try AudioFileReader(path: path)
            _ = try reader.read(maxFrames: 1000)
            Issue.record("a file without audio should be an error")
        } catch {
            expectInvalidAudioFormat(error, path: path, saying: ["holds no audio"])
        }
        #expect(throws: EarshotError.self) { try SignatureGenerator.signature(ofFile: path) }
    }
}
