import ArgumentParser
import EarshotTransport
import EarshotWire
import Foundation

struct RemoteCatalogEnableCommand: RemoteCatalogNameCommand {
    static let configuration = CommandConfiguration(commandName: "enable", abstract: "Make matches search a catalog (kept across restarts).")
    @OptionGroup var remote: RemoteOptions
    @Argument(help: "The catalog's name.") var name: String

    func run() throws {
        let s = try remote.call(Methods.Catalogs.enable, request)
        print("\(RemoteFormat.nameAndVersion(s)): \(RemoteFormat.catalogState(s))")
    }
}
