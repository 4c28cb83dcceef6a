import EarshotCore
import EarshotTestSupport
import Foundation
import Testing

/// `earshot` on video and broadcast files: a catalog from a broadcast capture, a query from a
/// film's second audio track, and the one-line errors of files it cannot use.
struct CLIVideoInputTests {
    /// capture.ts: 30 s of music (seed 81) as MP2 beside MPEG-2 video, as a DVB recording has it.
    /// film.mkv: 12 s from 8 s of that music as its French track (2), after an unrelated English
    /// track (1, the default).
    private func workspace() throws -> TemporaryDirectory {
        let ws = try TemporaryDirectory("earshot-cli-video")
        let music = AudioFixtures.music(seed: 81, duration: 30)
        try ws.write("capture.wav", WAVFile.bytes(music))
        try AudioFixtures.writeExcerpt("clip.wav", of: music, from: 8, length: 12, in: ws)
        try AudioFixtures.writeWAV("english.wav", seed: 82, duration: 12, in: ws)
        try FFmpegTool.run(FFmpegTool.blackVideo(seconds: 30) + ["-i", ws.path("capture.wav"), "-map", "0:v", "-map", "1:a",
                                                                 "-c:v", "mpeg2video", "-c:a", "mp2", "-ar", "48000", ws.path("capture.ts")])
        try FFmpegTool.run(["-i", ws.path("english.wav"), "-i", ws.path("clip.wav"), "-map", "0:a", "-map", "1:a",
                            "-c:a", "aac", "-metadata:s:a:0", "language=eng", "-metadata:s:a:1", "language=fra",
                            "-disposition:a:0", "default", "-disposition:a:1", "0", ws.path("film.mkv")])
        return ws
    }

    @Test func aCatalogFromACaptureMatchesTheTrackAskedFor() throws {
        let ws = try workspace()
        let created = try ws.earshot("catalog", "create", "-o", "show.earcat", "capture.ts")
        #expect(created.status == 0, "\(created.stderr)")
        // Off a terminal each finished file gets a line, which says which track was read.
        #expect(created.stderr.contains("capture.ts: 30.0"), "\(created.stderr)")
        #expect(created.stderr.contains("audio track 1 of 1 (mp2, mono, 48 kHz, no language tag)"), "\(created.stderr)")

        // The default track is the unrelated English one.
        let english = try ws.earshot("match", "-c", "show.earcat", "film.mkv")
        #expect(english.status == 1, "\(english.stdout)\(english.stderr)")
        #expect(english.stderr.contains("note: film.mkv: read audio track 1 of 2 (aac, mono, 16 kHz, eng)"), "\(english.stderr)")

        let french = try ws.earshot("match", "-c", "show.earcat", "film.mkv", "--audio-language", "fra", "--json")
        #expect(french.status == 0, "\(french.stderr)")
        let json = try JSONValue.parse(french.stdout)
        #expect(json["query"]?["audioTrack"] == .string("audio track 2 of 2 (aac, mono, 16 kHz, fra)"))
        let offset = try #require(json["items"]?[0]?["matchOffset"]?.double)
        // AAC's 1024 samples of encoder priming (64 ms at 16 kHz) stay in a Matroska file's audio.
        #expect(abs(offset - 8) < 0.12, "match offset \(offset)")
        #expect(json["items"]?[0]?["id"] == .string("capture"))

        let second = try ws.earshot("signature", "film.mkv", "--audio-track", "2", "-o", "fra.earsig")
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stdout.hasPrefix("fra.earsig: 12."))
        #expect(second.stdout.hasSuffix("peaks, from audio track 2 of 2 (aac, mono, 16 kHz, fra)\n"), "\(second.stdout)")
        let bySignature = try ws.earshot("match", "-c", "show.earcat", "fra.earsig")
        #expect(bySignature.status == 0)
    }

    @Test func filesItCannotUseGiveOneLineAndLeaveTheCatalogAsItWas() throws {
        let ws = try workspace()
        try #require(try ws.earshot("catalog", "create", "-o", "show.earcat", "capture.wav").status == 0)
        let before = try ws.bytes("show.earcat")
        try FFmpegTool.run(FFmpegTool.blackVideo(seconds: 3) + ["-c:v", "mpeg4", ws.path("silent-film.mp4")])
        let film = try ws.bytes("film.mkv")
        try ws.write("cut.mkv", Array(film.prefix(film.count / 2)))

        let cases: [(arguments: [String], status: Int32, error: String)] = [
            (["catalog", "add", "-c", "show.earcat", "silent-film.mp4"], 3,
             "earshot: silent-film.mp4: the file holds no audio track (its streams: video mpeg4)"),
            (["catalog", "add", "-c", "show.earcat", "cut.mkv"], 3,
             "earshot: cut.mkv: the audio stops at"),
            (["catalog", "add", "-c", "show.earcat", "film.mkv", "--audio-track", "3"], 3,
             "earshot: film.mkv: --audio-track 3: the file has 2 audio tracks, so no track 3 (1: aac, mono, 16 kHz, eng, default; 2: aac, mono, 16 kHz, fra)"),
            (["catalog", "add", "-c", "show.earcat", "film.mkv", "--audio-language", "deu"], 3,
             "earshot: film.mkv: --audio-language deu: no audio track is tagged with the language \"deu\""),
            (["catalog", "add", "-c", "show.earcat", "clip.wav", "--audio-track", "2"], 3,
             "earshot: clip.wav: --audio-track 2: the file has 1 audio track"),
            (["catalog", "add", "-c", "show.earcat", "film.mkv", "--audio-track", "2", "--audio-language", "fra"], 2,
             "give --audio-track or --audio-language, not both"),
            (["catalog", "add", "-c", "show.earcat", "film.mkv", "--audio-track", "0"], 2,
             "--audio-track counts from 1"),
        ]
        for c in cases {
            let run = try ws.earshot(arguments: c.arguments)
            #expect(run.status == c.status, "\(c.arguments): \(run.stderr)")
            if c.status == 3 {
                #expect(run.errorLines.count == 1 && run.errorLines[0].hasPrefix(c.error), "\(c.arguments): \(run.stderr)")
            } else {
                #expect(run.stderr.contains(c.error), "\(c.arguments): \(run.stderr)")
            }
            #expect(try ws.bytes("show.earcat") == before, "\(c.arguments) changed the catalog")
        }
    }
}
