import ArgumentParser
import EarshotTransport
import EarshotWire
import Foundation

/// `earshot remote match`
struct RemoteMatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "match",
        abstract: "Ask the daemon what is playing now.",
        discussion: """
            Prepared, the daemon answers from audio it has already heard; otherwise it listens up \
            to its catalog's maximum query duration. Exit status 0 on a match, 1 on none.
            """)

    @OptionGroup var remote: RemoteOptions
    @Flag(help: "Print the result as JSON (protobuf's JSON mapping of MatchResult).") var json = false

    func run() throws {
        let result = try remote.call(Methods.Recognizer.match, Earshot_V1_MatchRequest())
        if json { print(RemoteFormat.json(result)) } else { RemoteFormat.lines(result).forEach { print($0) } }
        if result.outcome == .error { throw CLIFailure("\(remote.server): \(result.error.name): \(result.error.message)", status: .remote) }
        if result.outcome != .match { throw ExitCode(ExitStatus.noMatch.rawValue) }
    }
}
