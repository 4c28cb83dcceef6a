import ArgumentParser
import EarshotTransport
import EarshotWire
import Foundation

/// `earshot remote catalog enable|disable|remove NAME`: one name, one call.
protocol RemoteCatalogNameCommand: ParsableCommand {
    var remote: RemoteOptions { get }
    var name: String { get }
}

extension RemoteCatalogNameCommand {
    var request: Earshot_V1_CatalogNameRequest {
        var r = Earshot_V1_CatalogNameRequest()
        r.name = name
        return r
    }
}
