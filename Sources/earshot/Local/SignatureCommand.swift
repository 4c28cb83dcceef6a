import ArgumentParser
import EarshotCore
import EarshotSystem

/// `earshot signature`: one media file to one `.earsig` file.
struct SignatureCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "signature",
        abstract: "Make the signature (.earsig) of a media file.",
        discussion: """
            Decodes the audio (WAV, FLAC, Ogg Vorbis/Opus, MP3, AIFF, …), fingerprints it and \
            writes the signature: a compact, irreversible fingerprint that catalogs are built \
            from. Make one signature per whole recording; time-ranged media items describe its parts.

            Example:
              earshot signature episode1.flac -o episode1.earsig
            """
    )

    @Argument(help: ArgumentHelp("The media file to fingerprint.", valueName: "media"))
    var media: String

    @Option(name: [.short, .long], help: ArgumentHelp("The signature file to write.", valueName: "file.earsig"))
    var output: String

    @OptionGroup var quietOption: QuietOption

    func run() throws {
        // Off a terminal, a "[1/1]" line would only repeat the summary printed below.
        let quiet = quietOption.quiet || !Terminal.stderrIsTerminal
        let signature = try ReferenceInputs.signatures(of: [media], quiet: quiet, forCatalog: false)[0]
        do { try AtomicFile.write(signature.dataRepresentation, to: output) } catch { throw CLIFailure.output(output, error) }
        print("\(output): \(Format.seconds(signature.duration)), \(Format.count(signature.peaks.count)) peaks")
    }
}
