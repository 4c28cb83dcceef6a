import ArgumentParser
import EarshotTransport
import EarshotWire
import Foundation

/// `earshot remote catalog list`
struct RemoteCatalogListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "Every catalog of the box with its state and version, and uploads in progress.")

    @OptionGroup var remote: RemoteOptions
    @Flag(help: "Print JSON (protobuf's JSON mapping of ListCatalogsResponse).") var json = false

    func run() throws {
        let reply = try remote.call(Methods.Catalogs.list, Earshot_V1_ListCatalogsRequest())
        if json { return print(RemoteFormat.json(reply)) }
        if reply.catalogs.isEmpty { print("no catalogs") }
        let rows = reply.catalogs.map { c -> [String] in
            [c.name, RemoteFormat.catalogState(c), c.version > 0 ? "v\(c.version)" : "-", c.referenceCount > 0 ? "\(c.referenceCount)" : "-",
             c.byteCount > 0 ? RemoteFormat.bytes(Int(clamping: c.byteCount)) : "-", String(c.sha256.prefix(12)),
             c.installedAt.isEmpty ? "-" : String(c.installedAt.prefix(19)),
             RemoteFormat.signer(c)]
        }
        if !rows.isEmpty {
            RemoteFormat.table(["NAME", "STATE", "VERSION", "REFS", "SIZE", "SHA256", "INSTALLED", "SIGNER"], rows).forEach { print($0) }
        }
        for c in reply.catalogs where !c.failure.isEmpty { print("\(c.name): \(c.failure)") }
        for c in reply.catalogs where !c.notice.isEmpty { print("\(c.name): \(c.notice)") }
        for u in reply.uploads {
            print("upload \(u.uploadID) of \(u.name): \(RemoteFormat.bytes(Int(clamping: u.offset))) of \(RemoteFormat.bytes(Int(clamping: u.size))) since \(u.startedAt.prefix(19))")
        }
    }
}
