import EarshotAudio
import EarshotCore
import EarshotSystem
import FFmpeg

/// The signature of any media file the CLI takes: audio files through `EarshotAudio`'s decoders
/// (libsndfile, libopus), video and broadcast files through FFmpeg.
public enum MediaFileSignature {
    /// A file's signature and, for a file read through FFmpeg, the track it came from.
    public struct Result {
        public let signature: Signature
        public let track: AudioTrack?
        /// Packets of the track that were damaged and skipped.
        public let damagedPackets: Int
        /// Seconds of silence put in gaps of the track's timeline.
        public let silenceFilled: Double
    }

    /// FFmpeg's names of the formats read through it: MP4/M4A/MOV, Matroska/WebM, MPEG-TS (and
    /// M2TS), MPEG program streams, MXF, AVI, FLV, ASF (WMA/WMV), and raw AAC, AC-3 and E-AC-3.
    /// Every other format keeps the audio decoders it always had.
    static let ffmpegFormats: Set<String> = ["mov", "mp4", "m4a", "matroska", "webm", "mpegts", "mpeg", "mxf", "avi", "flv", "asf",
                                             "aac", "ac3", "eac3"]
    /// How much of a file's start the format is recognised from.
    static let probeBytes = 1 << 18

    /// The signature of the file at `path`, from the audio track `choice` picks. `progress`
    /// receives the fraction done (0…1) after each block when the file's length is known.
    /// Throws `invalidAudioFormat` (its message starts with the path) for a file that cannot be
    /// read, has no such track, or holds no audio.
    public static func signature(
        ofFile path: String, track choice: AudioTrackChoice = .containerDefault, progress: ((Double) -> Void)? = nil
    ) throws(EarshotError) -> Result {
        guard let format = ffmpegFormat(of: path) else {
            try requireSingleTrack(choice, path: path)
            return Result(signature: try SignatureGenerator.signature(ofFile: path, progress: progress), track: nil,
                          damagedPackets: 0, silenceFilled: 0)
        }
        let reader = try MediaAudioReader(path: path, format: format, track: choice)
        let generator = SignatureGenerator()
        while let block = try reader.read(minimumFrames: 1 << 16) {
            do { try generator.append(block) } catch { throw error.prefixed(path) }
            if let fraction = reader.fractionDone { progress?(fraction) }
        }
        do {
            return Result(signature: try generator.signature(), track: reader.track, damagedPackets: reader.damagedPackets,
                          silenceFilled: reader.silenceFilled)
        } catch {
            throw error.prefixed(path)
        }
    }

    /// True when the file's content is in one of `ffmpegFormats`.
    public static func isReadThroughFFmpeg(_ path: String) -> Bool { ffmpegFormat(of: path) != nil }

    /// FFmpeg's name of the file's format when it is one of `ffmpegFormats`.
    static func ffmpegFormat(of path: String) -> String? {
        guard RegularFile.problem(at: path) == nil, let file = try? MappedFile(path: path),
              let name = MediaContainer.probeFormat(of: UnsafeRawBufferPointer(rebasing: file.bytes.prefix(probeBytes))),
              !ffmpegFormats.isDisjoint(with: name.split(separator: ",").map(String.init)) else { return nil }
        return name
    }

    /// Audio files hold one track, without a language tag: only `--audio-track 1` fits them.
    private static func requireSingleTrack(_ choice: AudioTrackChoice, path: String) throws(EarshotError) {
        switch choice {
        case .containerDefault, .number(1): return
        case .number: throw .invalidAudioFormat("\(path): \(choice.option): the file has 1 audio track")
        case .language: throw .invalidAudioFormat("\(path): \(choice.option): the file's one audio track has no language tag")
        }
    }
}
