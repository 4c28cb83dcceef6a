import ArgumentParser
import EarshotCore
import EarshotSystem

/// `earshot signature`: one media file to one `.earsig` file.
struct SignatureCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "signature",
        abstract: "Make the signature (.earsig) of a media file.",
        discussion: """
            Decodes the audio, fingerprints it and writes the signature: a compact, \
            irreversible fingerprint that catalogs are built from. Make one signature per whole \
            recording; time-ranged media items describe its parts.

            Audio files: WAV, FLAC, Ogg Vorbis/Opus, MP3, AIFF and the other formats libsndfile \
            reads. Video and broadcast files, through FFmpeg: MP4, M4A, MOV, Matroska/WebM, \
            MPEG-TS, MPEG program streams, MXF, AVI, FLV, ASF, and raw AAC or AC-3, with AAC, \
            AC-3, E-AC-3, MP2, Opus or any audio codec FFmpeg decodes. Of a file with several \
            audio tracks the default one is read unless --audio-track or --audio-language picks \
            another; the output says which track was used. Damaged packets of a broadcast \
            capture are skipped and gaps in its timeline filled with silence (the output counts \
            both); a file cut short of the length it states is refused.

            Examples:
              earshot signature episode1.flac -o episode1.earsig
              earshot signature film.mkv --audio-language eng -o film.earsig
            """
    )

    @Argument(help: ArgumentHelp("The media file to fingerprint.", valueName: "media"))
    var media: String

    @Option(name: [.short, .long], help: ArgumentHelp("The signature file to write.", valueName: "file.earsig"))
    var output: String

    @OptionGroup var audioTrack: AudioTrackOptions
    @OptionGroup var quietOption: QuietOption

    func run() throws {
        // Off a terminal, a "[1/1]" line would only repeat the summary printed below.
        let quiet = quietOption.quiet || !Terminal.stderrIsTerminal
        let loaded = try ReferenceInputs.signatures(of: [media], track: audioTrack.choice, quiet: quiet, forCatalog: false)[0]
        let signature = loaded.signature
        do { try AtomicFile.write(signature.dataRepresentation, to: output) } catch { throw CLIFailure.output(output, error) }
        let source = loaded.source.map { ", from \($0)" } ?? ""
        print("\(output): \(Format.seconds(signature.duration)), \(Format.count(signature.peaks.count)) peaks\(source)")
    }
}
