import ArgumentParser
import EarshotTransport
import EarshotWire
import Foundation

struct RemoteCatalogDisableCommand: RemoteCatalogNameCommand {
    static let configuration = CommandConfiguration(
        commandName: "disable", abstract: "Stop matches from searching a catalog; its file stays (kept across restarts).")
    @OptionGroup var remote: RemoteOptions
    @Argument(help: "The catalog's name.") var name: String

    func run() throws {
        let s = try remote.call(Methods.Catalogs.disable, request)
        print("\(RemoteFormat.nameAndVersion(s)): \(RemoteFormat.catalogState(s))")
    }
}
