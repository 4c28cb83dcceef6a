import ArgumentParser
import EarshotCore
import EarshotSystem
import EarshotTransport
import EarshotWire
import Foundation

/// `earshot remote library add`
struct RemoteLibraryAddCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add", abstract: "Add a match to your library: the one the daemon follows now, or a new one.",
        discussion: """
            --from-last-match adds the item the daemon is following (its session's current match); \
            --match asks the daemon to match now (operator key) and adds the result in the same call. \
            Exit status 1 when there is nothing to add.
            """)

    @OptionGroup var remote: RemoteOptions
    @Flag(name: .customLong("from-last-match"), help: "Add the item the daemon matched last and follows now.") var fromLastMatch = false
    @Flag(name: .customLong("match"), help: "Match now and add the result (needs an operator or admin key).") var matchNow = false
    @Flag(help: "Print the reply as JSON.") var json = false

    func validate() throws {
        guard fromLastMatch != matchNow else { throw ValidationError("say what to add: --from-last-match or --match") }
    }

    func run() throws {
        if matchNow {
            var request = Earshot_V1_MatchRequest()
            request.addToLibrary = true
            let result = try remote.call(Methods.Recognizer.match, request)
            if json { print(RemoteFormat.json(result)) } else { RemoteFormat.lines(result).forEach { print($0) } }
            if result.outcome != .match { throw ExitCode(ExitStatus.noMatch.rawValue) }
            let status = result.library
            guard status.code == 0 else {
                throw CLIFailure("\(remote.server): the match was not added: \(RpcStatusCode(rawValue: status.code)): \(status.message)", status: .remote)
            }
            if !json { print("added \(status.itemIds.joined(separator: " ")) (library version \(status.version))") }
            return
        }
        let snapshot = try remote.call(Methods.Session.getSnapshot, Earshot_V1_GetSnapshotRequest())
        guard snapshot.hasCurrentMatch else {
            Terminal.error("earshot: the daemon follows no match now; nothing added (try --match)")
            throw ExitCode(ExitStatus.noMatch.rawValue)
        }
        var new = Earshot_V1_NewLibraryItem()
        new.item = snapshot.currentMatch
        new.matchedAtUnixMs = snapshot.takenAtUnixMs
        var request = Earshot_V1_AddLibraryItemsRequest()
        request.items = [new]
        let reply = try remote.call(Methods.Library.add, request)
        if json { print(RemoteFormat.json(reply)); return }
        for item in reply.items { print("added \(item.id)  \(RemoteFormat.name(item.item.mediaItem))") }
        print("library version \(reply.version), \(reply.itemCount) item\(reply.itemCount == 1 ? "" : "s")")
    }
}
