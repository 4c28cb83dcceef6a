import ArgumentParser
import EarshotTransport
import EarshotWire
import Foundation

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
