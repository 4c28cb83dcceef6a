import EarshotTestSupport
import Foundation

/// Video and broadcast files made once per test run from synthetic music: each container and
/// codec a catalog author meets, two tracks with languages, a video-only file and cut files.
final class MediaFixtures: @unchecked Sendable {
    static let shared = try! MediaFixtures()

    let folder: TemporaryDirectory
    /// The music every single-track fixture carries (48 kHz mono), and its WAV file.
    let music: [Float]
    let wav: String
    /// The second language's music, for the two-track files.
    let otherMusic: [Float]
    let otherWAV: String
    static let rate = 48_000
    static let seconds = 16.0

    /// A black picture, for files that carry video as films do.
    private static let video = FFmpegTool.blackVideo(seconds: Int(seconds))

    /// Single-track files whose audio is `music` encoded losslessly: decoded, they are the WAV's samples.
    static let lossless: [(name: String, arguments: [String])] = [
        ("pcm.mkv", ["-c:a", "pcm_s16le"]),
        ("pcm.mov", ["-c:a", "pcm_s16le"]),
        ("pcm.mxf", FFmpegTool.blackVideo(seconds: Int(seconds), rate: 25) + ["-c:v", "mpeg2video", "-c:a", "pcm_s16le"]),
    ]
    /// Single-track files with the lossy codecs broadcasters and streaming use.
    static let lossy: [(name: String, arguments: [String])] = [
        ("aac.mp4", video + ["-c:v", "mpeg4", "-c:a", "aac", "-b:a", "128k", "-ac", "2"]),
        ("aac.mov", ["-c:a", "aac", "-b:a", "128k"]),
        ("opus.webm", ["-c:a", "libopus", "-b:a", "64k"]),
        ("ac3.mkv", video + ["-c:v", "mpeg4", "-c:a", "ac3", "-ac", "2"]),
        ("eac3.ts", ["-c:a", "eac3", "-ac", "2", "-f", "mpegts"]),
        ("mp2.ts", video + ["-c:v", "mpeg2video", "-c:a", "mp2", "-b:a", "192k", "-f", "mpegts"]),
        ("aac-adts.aac", ["-c:a", "aac", "-b:a", "128k"]),
        ("ac3.ac3", ["-c:a", "ac3"]),
        ("aac.flv", ["-c:a", "aac", "-ar", "44100"]),
        ("wma.asf", ["-c:a", "wmav2", "-b:a", "128k", "-f", "asf"]),
        ("hires.mkv", ["-c:a", "pcm_s24le", "-ar", "192000"]),
        ("aac-faststart.mp4", ["-c:a", "aac", "-movflags", "+faststart"]),
    ]

    private init() throws {
        folder = try TemporaryDirectory("earshot-media-fixtures", removedAtExit: true)
        music = SyntheticMusic.make(seed: 21, duration: Self.seconds, sampleRate: Double(Self.rate))
        otherMusic = SyntheticMusic.make(seed: 22, duration: Self.seconds, sampleRate: Double(Self.rate))
        wav = try WAVFile.write(music, sampleRate: Self.rate, to: folder.path("music.wav"))
        otherWAV = try WAVFile.write(otherMusic, sampleRate: Self.rate, to: folder.path("other.wav"))
        for (name, arguments) in Self.lossless + Self.lossy {
            let inputs = arguments.first == "-f" && arguments.contains("lavfi") ? Array(arguments.prefix(4)) : []
            let rest = Array(arguments.dropFirst(inputs.count))
            // The picture (when there is one) is input 0 and the music input 1; map both.
            let maps = inputs.isEmpty ? [] : ["-map", "0:v", "-map", "1:a", "-shortest"]
            try FFmpegTool.run(inputs + ["-i", wav] + maps + rest + [folder.path(name)])
        }
        // Two tracks: English (music, not marked default) then French (otherMusic, the default).
        for name in ["two-tracks.mkv", "two-tracks.ts"] {
            try FFmpegTool.run(["-i", wav, "-i", otherWAV, "-map", "0:a", "-map", "1:a", "-c:a", "ac3",
                                "-metadata:s:a:0", "language=eng", "-metadata:s:a:1", "language=fra",
                                "-metadata:s:a:1", "title=Version française",
                                "-disposition:a:0", "0", "-disposition:a:1", "default", folder.path(name)])
        }
        try FFmpegTool.run(Self.video + ["-c:v", "mpeg4", folder.path("video-only.mp4")])
        try FFmpegTool.run(["-i", wav, "-c:a", "aac", "-encryption_scheme", "cenc-aes-ctr",
                            "-encryption_key", "76a6c65c5ea762046bd749a2e632ccbb",
                            "-encryption_kid", "a7e61c373e219033c21091fa607bf3b8", folder.path("encrypted.mp4")])
    }

    func path(_ name: String) -> String { folder.path(name) }

    /// A copy of the first half of `name`, as a download or a recording cut off in the middle.
    func cutInHalf(_ name: String) throws -> String {
        let bytes = try folder.bytes(name)
        return try folder.write("cut-" + name, Array(bytes.prefix(bytes.count / 2)))
    }
}
