import ArgumentParser
import EarshotTransport
import EarshotWire
import Foundation

/// `earshot remote prepare`
struct RemotePrepareCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prepare", abstract: "Start the daemon's prerecording, so the next match answers at once.")

    @OptionGroup var remote: RemoteOptions

    func run() throws {
        let reply = try remote.call(Methods.Recognizer.prepare, Earshot_V1_PrepareRequest())
        print("state: \(RemoteFormat.state(reply.state))")
    }
}

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

/// `earshot remote stream`
struct RemoteStreamCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stream",
        abstract: "Print the daemon's match results as the programme plays, until interrupted.")

    @OptionGroup var remote: RemoteOptions
    @Flag(help: "Also print repeated matches of the current item.") var repeats = false
    @Flag(help: "One JSON object (MatchResult) per line.") var json = false
    @Option(help: ArgumentHelp("Stop after this many seconds.", valueName: "seconds")) var duration: Double?

    func run() throws {
        let (remote, repeats, json, duration) = (self.remote, self.repeats, self.json, self.duration)
        try runUntilInterrupted(duration: duration) {
            let client = try remote.client()
            defer { client.close() }
            var request = Earshot_V1_StreamMatchesRequest()
            request.includeRepeats = repeats
            // A stream runs as long as asked: its deadline is the duration (or a day).
            let limit = Duration.milliseconds(Int((duration ?? 86_400) * 1000) + 5000)
            do {
                for try await result in client.stream(Methods.Recognizer.streamMatches, request, timeout: limit) {
                    if json { print(RemoteFormat.json(result)) } else { RemoteFormat.lines(result).forEach { print($0) } }
                }
            } catch let error as RpcError {
                if error.code != .cancelled { throw remote.failure(error) }
            } catch {
                throw CLIFailure("\(remote.server): \(error)", status: .remote)
            }
        }
    }
}

/// `earshot remote state`
struct RemoteStateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "state", abstract: "Show the daemon's session: state, what is playing and where, capture health.")

    @OptionGroup var remote: RemoteOptions
    @Flag(help: "Print the SessionSnapshot as JSON.") var json = false

    func run() throws {
        let snapshot = try remote.call(Methods.Session.getSnapshot, Earshot_V1_GetSnapshotRequest())
        if json { print(RemoteFormat.json(snapshot)) } else { RemoteFormat.snapshot(snapshot).forEach { print($0) } }
    }
}
