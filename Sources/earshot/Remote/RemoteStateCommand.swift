import ArgumentParser
import EarshotTransport
import EarshotWire
import Foundation

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
