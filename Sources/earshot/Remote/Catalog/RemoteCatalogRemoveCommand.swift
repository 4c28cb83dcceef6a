import ArgumentParser
import EarshotTransport
import EarshotWire
import Foundation

struct RemoteCatalogRemoveCommand: RemoteCatalogNameCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove", abstract: "Delete a catalog from the box (matches running on it finish first).")
    @OptionGroup var remote: RemoteOptions
    @Argument(help: "The catalog's name.") var name: String

    func run() throws {
        let reply = try remote.call(Methods.Catalogs.remove, request)
        let removed = reply.removed
        print("removed \(RemoteFormat.nameAndVersion(removed))\(removed.failure.isEmpty ? "" : " (it had failed to load: \(removed.failure))")")
    }
}
