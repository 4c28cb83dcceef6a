import ArgumentParser
import EarshotAudio
import EarshotCore
import Foundation

/// The `earshot` command: signatures, custom catalogs and matching from the command line,
/// like Apple's `shazam` tool. This type only parses arguments and turns failures into exit codes.
@main
struct Earshot: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "earshot",
        abstract: "Make audio signatures, build custom catalogs, match audio against them and listen live.",
        discussion: """
            Earshot recognises which known recording is playing and where in it we are, like \
            ShazamKit with custom catalogs. Typical workflow:

              earshot signature episode1.wav -o episode1.earsig
              earshot catalog create -o show.earcat episode1.earsig episode2.wav \\
                  --media-items items.csv
              earshot catalog display -c show.earcat
              earshot match -c show.earcat clip.wav
              earshot listen -c show.earcat --device plughw:1,0

            Exit status:
              0  success (for `match`: a match was found; for `listen` and the
                 following `remote` commands: ended by Ctrl-C, SIGTERM, --duration
                 or the end of the file)
              1  `match` found no match
              2  usage error (bad or missing arguments)
              3  bad input: a missing, unreadable, truncated, corrupt or foreign
                 file, or a malformed media-items CSV; for `listen`, also a
                 capture device that delivered no audio at all
              4  internal error, or the output could not be written
              5  `remote`: the daemon did not answer in time, refused the client's
                 key, or answered with an error status; or a push was interrupted
                 (run it again to resume)

            Errors are one line on standard error: `earshot: <file>: <problem>`. A command that \
            fails never leaves a half-written or modified output file behind.
            """,
        version: EarshotVersion.string,
        subcommands: [SignatureCommand.self, CatalogCommand.self, MatchCommand.self, ListenCommand.self, DevicesCommand.self,
                      RemoteCommand.self, KeygenCommand.self]
    )

    /// Parses, runs, and maps every failure to one stderr line and a documented exit status.
    static func main() {
        // Decoders' own chatter stays off the terminal; our messages go through Terminal.
        StandardErrorSilencer.enable()
        StandardOutput.flushEachLine()
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch let failure as CLIFailure {
            Terminal.error("earshot: " + failure.message)
            Foundation.exit(failure.status.rawValue)
        } catch let code as ExitCode {
            Foundation.exit(code.rawValue)
        } catch let error as EarshotError {
            // Every command wraps core errors in CLIFailure; one that slips through is a bug.
            Terminal.error("earshot: " + Terminal.oneLine(error.message))
            Foundation.exit(ExitStatus.internalFailure.rawValue)
        } catch {
            switch exitCode(for: error) {
            case .success:
                // --help and --version.
                print(fullMessage(for: error))
                Foundation.exit(ExitStatus.success.rawValue)
            case .validationFailure:
                var text = fullMessage(for: error)
                if text.hasPrefix("Error: ") { text = "earshot: " + text.dropFirst("Error: ".count) }
                Terminal.error(text)
                Foundation.exit(ExitStatus.usage.rawValue)
            default:
                Terminal.error("earshot: " + Terminal.oneLine(message(for: error)))
                Foundation.exit(ExitStatus.internalFailure.rawValue)
            }
        }
    }
}
