import ArgumentParser
import EarshotCore
import EarshotSystem
import EarshotTransport
import EarshotWire
import Foundation

/// `earshot remote library owners`
struct RemoteLibraryOwnersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "owners", abstract: "Admin: every library on the daemon, with its size and whether its key is still allowed.")

    @OptionGroup var remote: RemoteOptions
    @Flag(help: "Print the reply as JSON.") var json = false

    func run() throws {
        let reply = try remote.call(Methods.Library.listOwners, Earshot_V1_ListLibraryOwnersRequest())
        if json { print(RemoteFormat.json(reply)); return }
        if reply.owners.isEmpty { print("no libraries yet"); return }
        let rows = reply.owners.map { o in
            [o.name, "\(o.itemCount)", RemoteFormat.bytes(Int(o.bytes)), "\(o.version)",
             o.changedAtUnixMs == 0 ? "-" : ISODate.render(Date(timeIntervalSince1970: Double(o.changedAtUnixMs) / 1000)),
             o.allowed ? "yes" : "no (removed from the allow-list)", o.ownerHash]
        }
        RemoteFormat.table(["OWNER", "ITEMS", "SIZE", "VERSION", "CHANGED", "ALLOWED", "NOTICE HASH"], rows).forEach { print($0) }
    }
}
