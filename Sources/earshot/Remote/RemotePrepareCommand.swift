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
