import EarshotAudio
import EarshotCore
import EarshotMedia
import EarshotTestSupport
import Foundation
import Testing

/// Signatures of video and broadcast files: the audio track of each container and codec gives
/// the signature its audio gives as WAV, and the track chosen is the one asked for.
struct MediaFileSignatureTests {
    let fixtures = MediaFixtures.shared

    /// A catalog of the fixtures' two pieces of music, made from their WAV files.
    private static let catalog: MappedCatalog = {
        var catalog = CustomCatalog()
        for (id, wav) in [("music", MediaFixtures.shared.wav), ("other", MediaFixtures.shared.otherWAV)] {
            try! catalog.addReferenceSignature(try! SignatureGenerator.signature(ofFile: wav), representing: [MediaItem(id: id)])
        }
        return try! MappedCatalog(bytes: try! catalog.dataRepresentation())
    }()

    /// The item each 6-second window of `signature` matches and where, as "id@offset".
    private func windows(of signature: Signature) throws -> [(id: String?, offset: Double, start: Double)] {
        let matcher = Matcher(catalog: Self.catalog)
        return try stride(from: 1.0, through: MediaFixtures.seconds - 7, by: 3).map { start in
            let top = matcher.match(try signature.slice(from: start, duration: 6)).mediaItems.first
            return (top?.mediaItem.id, top?.matchOffset ?? -1, start)
        }
    }

    @Test(arguments: MediaFixtures.lossless.map(\.name))
    func aLosslessTrackGivesTheSamePeaksAsItsWAV(name: String) throws {
        let fromWAV = try SignatureGenerator.signature(ofFile: fixtures.wav)
        let result = try MediaFileSignature.signature(ofFile: fixtures.path(name))
        #expect(result.signature.peaks == fromWAV.peaks)
        #expect(abs(result.signature.duration - fromWAV.duration) < 1e-9)
        #expect(result.track?.description == "audio track 1 of 1 (pcm_s16le, mono, 48 kHz, no language tag)")
        #expect(result.damagedPackets == 0)
    }

    @Test(arguments: MediaFixtures.lossy.map(\.name))
    func aLossyTrackIsRecognisedAsItsWAVEverywhere(name: String) throws {
        var fractions: [Double] = []
        let result = try MediaFileSignature.signature(ofFile: fixtures.path(name)) { fractions.append($0) }
        // Encoders add a few milliseconds of priming or padding at most.
        #expect(abs(result.signature.duration - MediaFixtures.seconds) < 0.1, "\(result.signature.duration) s")
        for window in try windows(of: result.signature) {
            #expect(window.id == "music" && abs(window.offset - window.start) < 0.05,
                    "window at \(window.start) s: \(window.id ?? "no match") at \(window.offset)")
        }
        #expect(result.track?.number == 1 && result.track?.count == 1)
        #expect(result.damagedPackets == 0)
        #expect(result.silenceFilled == 0)
        // Progress rises to the end where the file says how long it is.
        if !fractions.isEmpty {
            #expect(fractions == fractions.sorted())
            #expect(fractions.last! > 0.95)
        }
    }

    @Test(arguments: ["two-tracks.mkv", "two-tracks.ts"])
    func theTrackAskedForIsTheOneRead(name: String) throws {
        let path = fixtures.path(name)
        let byDefault = try MediaFileSignature.signature(ofFile: path)
        let french = try MediaFileSignature.signature(ofFile: path, track: .language("FRA"))
        // The bibliographic code of French finds the track tagged with the terminology code.
        #expect(try MediaFileSignature.signature(ofFile: path, track: .language("fre")).track?.number == 2)
        let english = try MediaFileSignature.signature(ofFile: path, track: .language("eng"))
        let first = try MediaFileSignature.signature(ofFile: path, track: .number(1))
        #expect(english.track?.number == 1 && first.track?.number == 1)
        #expect(english.signature.peaks == first.signature.peaks)
        #expect(try windows(of: english.signature).allSatisfy { $0.id == "music" })
        #expect(try windows(of: french.signature).allSatisfy { $0.id == "other" })
        #expect(french.track?.stream.language == "fra")
        if name.hasSuffix(".mkv") {
            // Matroska keeps the default flag and the title; MPEG-TS keeps neither.
            #expect(byDefault.track?.number == 2)
            #expect(french.track?.description == "audio track 2 of 2 (ac3, mono, 48 kHz, fra, \"Version française\")")
        } else {
            #expect(byDefault.track?.number == 1)
        }
    }

    @Test func aTrackThatIsNotThereIsAClearErrorListingTheTracks() throws {
        let path = fixtures.path("two-tracks.mkv")
        let noThird = try #require(throws: EarshotError.self) { try MediaFileSignature.signature(ofFile: path, track: .number(3)) }
        #expect(noThird.message == "\(path): --audio-track 3: the file has 2 audio tracks, so no track 3 "
            + "(1: ac3, mono, 48 kHz, eng; 2: ac3, mono, 48 kHz, fra, default, \"Version française\")")
        let noGerman = try #require(throws: EarshotError.self) { try MediaFileSignature.signature(ofFile: path, track: .language("deu")) }
        #expect(noGerman.message.hasPrefix("\(path): --audio-language deu: no audio track is tagged with the language \"deu\" (1: ac3"))
        // An audio file has one track, without a language.
        let wavTrack = try #require(throws: EarshotError.self) { try MediaFileSignature.signature(ofFile: fixtures.wav, track: .number(2)) }
        #expect(wavTrack.message == "\(fixtures.wav): --audio-track 2: the file has 1 audio track")
        let wavLanguage = try #require(throws: EarshotError.self) { try MediaFileSignature.signature(ofFile: fixtures.wav, track: .language("eng")) }
        #expect(wavLanguage.message == "\(fixtures.wav): --audio-language eng: the file's one audio track has no language tag")
        #expect(try MediaFileSignature.signature(ofFile: fixtures.wav, track: .number(1)).track == nil)
    }

    @Test func aFileWithoutAudioSaysWhatItHolds() throws {
        let path = fixtures.path("video-only.mp4")
        let error = try #require(throws: EarshotError.self) { try MediaFileSignature.signature(ofFile: path) }
        #expect(error.message == "\(path): the file holds no audio track (its streams: video mpeg4)")
    }

    @Test func anEncryptedTrackIsRefused() throws {
        let path = fixtures.path("encrypted.mp4")
        let error = try #require(throws: EarshotError.self) { try MediaFileSignature.signature(ofFile: path) }
        #expect(error.message == "\(path): audio track 1 of 1 (aac) is encrypted (DRM); only unencrypted audio can be fingerprinted")
    }

    @Test(arguments: ["ac3.mkv", "aac.mp4", "aac.mov", "aac-faststart.mp4"])
    func aFileCutInTheMiddleIsCalledTruncated(name: String) throws {
        let cut = try fixtures.cutInHalf(name)
        let error = try #require(throws: EarshotError.self) { try MediaFileSignature.signature(ofFile: cut) }
        #expect(error.message.hasPrefix("\(cut): "))
        #expect(error.message.contains("truncated"), "\(error.message)")
        #expect(!error.message.contains("\n"))
    }

    @Test func aCutBroadcastCaptureIsReadAsTheShorterCaptureItIs() throws {
        // MPEG-TS states no length: a capture cut short is a shorter capture, not a broken file.
        let cut = try fixtures.cutInHalf("mp2.ts")
        let result = try MediaFileSignature.signature(ofFile: cut)
        #expect(result.signature.duration > 2 && result.signature.duration < MediaFixtures.seconds - 2)
        #expect(try windows(of: result.signature).first?.id == "music")
    }

    @Test func aCaptureWithADropoutKeepsItsTimeline() throws {
        // A second of the capture lost in reception: its packets are gone, its timestamps jump.
        let bytes = try fixtures.folder.bytes("mp2.ts")
        let packet = 188, perSecond = bytes.count / Int(MediaFixtures.seconds)
        let from = (perSecond * 4) / packet * packet, to = from + perSecond / packet * packet
        let path = try fixtures.folder.write("dropout.ts", Array(bytes[..<from] + bytes[to...]))
        let result = try MediaFileSignature.signature(ofFile: path)
        #expect(result.silenceFilled > 0.5 && result.silenceFilled < 1.5, "\(result.silenceFilled) s filled")
        #expect(abs(result.signature.duration - MediaFixtures.seconds) < 0.2, "\(result.signature.duration) s")
        // The music after the dropout is found at its own place, not a second early.
        let late = try windows(of: result.signature).filter { $0.start >= 6 }
        #expect(!late.isEmpty)
        for window in late {
            #expect(window.id == "music" && abs(window.offset - window.start) < 0.05, "window at \(window.start) s: \(window.offset)")
        }
    }

    @Test func timestampsThatSkipAheadMoreThanTheAudioHoldsAreRefused() throws {
        // Nine slices of 0.3 s, each 8.7 s after the last on the timeline: 2.7 s of sound and
        // 70 s of gaps, more than a capture's dropouts ever leave.
        var bytes: [UInt8] = []
        for k in 0..<9 {
            let slice = fixtures.path("slice\(k).ts")
            try FFmpegTool.run(["-ss", "\(k)", "-t", "0.3", "-i", fixtures.wav, "-c:a", "mp2", "-output_ts_offset", "\(Double(k) * 8.7)",
                                "-f", "mpegts", slice])
            bytes += try fixtures.folder.bytes("slice\(k).ts")
        }
        let path = try fixtures.folder.write("skipping.ts", bytes)
        let error = try #require(throws: EarshotError.self) { try MediaFileSignature.signature(ofFile: path) }
        #expect(error.message.hasPrefix("\(path): audio track 1 of 1 (mp2"))
        #expect(error.message.contains("skips ahead in time more than it holds audio"), "\(error.message)")
    }

    @Test func aNameWithAColonIsAFileNotAProtocol() throws {
        let path = fixtures.path("news-20:00.mkv")
        try? FileManager.default.removeItem(atPath: path)
        try FileManager.default.copyItem(atPath: fixtures.path("ac3.mkv"), toPath: path)
        #expect(try MediaFileSignature.signature(ofFile: path).track?.stream.codecName == "ac3")
    }

    @Test func aCodecFFmpegDoesNotKnowIsNamedAsSuch() throws {
        // The Matroska codec id of the PCM track, changed to one no decoder has.
        var bytes = try fixtures.folder.bytes("pcm.mkv")
        let id = Array("A_PCM/INT/LIT".utf8)
        let at = try #require((0...(bytes.count - id.count)).first { bytes[$0..<($0 + id.count)].elementsEqual(id) })
        bytes.replaceSubrange(at..<(at + id.count), with: Array("A_XYZ/INT/LIT".utf8))
        let path = try fixtures.folder.write("unknown-codec.mkv", bytes)
        let error = try #require(throws: EarshotError.self) { try MediaFileSignature.signature(ofFile: path) }
        #expect(error.message.hasPrefix("\(path): audio track 1 of 1 (unknown"))
        #expect(error.message.hasSuffix("uses a codec that FFmpeg here cannot decode (unknown)"))
    }

    @Test func audioFilesKeepTheirOwnDecoders() throws {
        #expect(!MediaFileSignature.isReadThroughFFmpeg(fixtures.wav))
        for name in MediaFixtures.lossless.map(\.name) + MediaFixtures.lossy.map(\.name) {
            #expect(MediaFileSignature.isReadThroughFFmpeg(fixtures.path(name)), "\(name)")
        }
        // Not media at all: the audio decoders' own message, which names the file.
        let junk = try fixtures.folder.write("junk.mp4", Array(repeating: 0x2A, count: 5000))
        #expect(!MediaFileSignature.isReadThroughFFmpeg(junk))
        let error = try #require(throws: EarshotError.self) { try MediaFileSignature.signature(ofFile: junk) }
        #expect(error.message.hasPrefix("\(junk): not a recognised audio file"))
    }
}
