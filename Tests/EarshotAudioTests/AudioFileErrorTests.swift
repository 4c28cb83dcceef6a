import Dispatch
import EarshotAudio
import EarshotCore
import EarshotSync
import EarshotTestSupport
import Testing

/// Files that are not usable audio: each must give `invalidAudioFormat` naming the file and the
/// reason, and none may crash.
@Suite("AudioFileDecoder errors")
struct AudioFileErrorTests {
    /// Decodes `path` expecting failure, and checks the message.
    private func expectFailure(
        _ path: String, saying phrases: [String], sourceLocation: SourceLocation = #_sourceLocation
    ) {
        do {
            let buffer = try AudioFileDecoder.decode(path: path)
            Issue.record("decoding \(path) should fail, got \(buffer.format)", sourceLocation: sourceLocation)
        } catch {
            #expect(error.code == 100, sourceLocation: sourceLocation)
            expectInvalidAudioFormat(error, path: path, saying: phrases, sourceLocation: sourceLocation)
        }
        // The streaming reader opens files the same way and must agree.
        #expect(throws: EarshotError.self, sourceLocation: sourceLocation) {
            let reader = try AudioFileReader(path: path)
            while try reader.read(maxFrames: 4096) != nil {}
            throw EarshotError.invalidAudioFormat("no audio")
        }
    }

    @Test("a missing file says there is no such file")
    func missingFile() throws {
        let dir = try TemporaryDirectory()
        expectFailure(dir.path("nothing-here.wav"), saying: ["no such file"])
        expectFailure(dir.path("not-a-folder.wav/inside.wav"), saying: ["no such file"])
    }

    @Test("a directory says it is a directory")
    func directory() throws {
        let dir = try TemporaryDirectory()
        expectFailure(dir.path, saying: ["is a directory"])
    }

    @Test("an empty file says it holds no audio")
    func emptyFile() throws {
        let dir = try TemporaryDirectory()
        expectFailure(try dir.write("empty.wav", []), saying: ["empty", "no audio"])
    }

    @Test("a WAV with a header but no frames says it holds no audio")
    func zeroFrameWAV() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("silence.wav")
        try Sox.run(["-n", "-r", "44100", "-c", "1", path, "trim", "0", "0"])
        expectFailure(path, saying: ["no audio"])
    }

    @Test("random bytes are not recognised as audio")
    func randomBytes() throws {
        let dir = try TemporaryDirectory()
        for (i, size) in [1, 11, 100, 4096, 65_536].enumerated() {
            let bytes = Signal.pseudoRandomBytes(count: size, seed: 0x1234_5678 &+ UInt64(i))
            expectFailure(try dir.write("noise\(i).wav", bytes), saying: ["not a recognised audio file"])
        }
    }

    @Test("a file cut off inside its header is reported as truncated", arguments: [
        ("tone.wav", 30), ("tone.wav", 44), ("tone.flac", 100), ("tone.mp3", 200),
    ])
    func truncatedHeader(fileName: String, keptBytes: Int) throws {
        let dir = try TemporaryDirectory()
        expectFailure(try dir.cutSine(fileName, seconds: 2, keeping: keptBytes), saying: ["truncated"])
    }

    /// libsndfile keeps a failed open's error in one process-wide variable: files that fail at
    /// once, for different reasons, must each be told their own (a full test run once called a cut
    /// MP3 "not a recognised audio file" while another test opened random bytes).
    @Test("files failing at the same time each get their own reason")
    func concurrentFailuresKeepTheirReasons() throws {
        let dir = try TemporaryDirectory()
        let cut = try dir.cutSine("tone.mp3", seconds: 2, keeping: 200)
        let noise = try dir.write("noise.wav", Signal.pseudoRandomBytes(count: 4096, seed: 77))
        let wrong = Locked([String]())
        DispatchQueue.concurrentPerform(iterations: 400) { i in
            let (path, phrase) = i.isMultiple(of: 2) ? (cut, "truncated") : (noise, "not a recognised audio file")
            do {
                _ = try AudioFileDecoder.decode(path: path)
                wrong.withLock { $0.append("\(path) decoded") }
            } catch {
                let text = "\(error)"
                if !text.lowercased().contains(phrase) { wrong.withLock { $0.append(text) } }
            }
        }
        let found = wrong.withLock { $0 }
        #expect(found.isEmpty, "\(found.count) of 400: \(found.prefix(3))")
    }

    @Test("an unsupported sample rate names the supported range", arguments: [4_000, 192_000])
    func unsupportedRate(rate: Int) throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("tone-\(rate).wav")
        try Sox.sine(to: path, frequencies: [500], rate: rate)
        expectFailure(path, saying: ["sample rate", "8000–96000 Hz"])
    }

    @Test("too many channels names the supported range")
    func tooManyChannels() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("many.wav")
        try Sox.sine(to: path, frequencies: Array(repeating: 440, count: 33), seconds: 0.1, rate: 8_000)
        expectFailure(path, saying: ["33 channels", "1–32"])
    }
}
