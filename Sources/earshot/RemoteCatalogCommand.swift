import ArgumentParser
import EarshotTransport
import EarshotWire
import Foundation

/// `earshot remote catalog …`: the daemon's catalogs (admin keys).
struct RemoteCatalogCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "catalog",
        abstract: "Install, list, enable, disable and remove the catalogs of one box (or push to many).",
        discussion: """
            A box matches against every enabled catalog in its catalogs folder. `push` uploads a \
            catalog file (resumable: run it again after an interruption and it goes on where it \
            stopped), the box verifies it (SHA-256, structure, author signature if required) and \
            swaps it in while it keeps matching. These calls need an admin key.

            Examples:
              earshot remote catalog push show.earcat --enable
              earshot remote catalog push show.earcat --server tcp://tv1:7400 --server tcp://tv2:7400
              earshot remote catalog list
              earshot remote catalog disable old-show
              earshot remote catalog remove old-show
            """,
        subcommands: [RemoteCatalogPushCommand.self, RemoteCatalogListCommand.self, RemoteCatalogDescribeCommand.self,
                      RemoteCatalogEnableCommand.self, RemoteCatalogDisableCommand.self, RemoteCatalogRemoveCommand.self]
    )
}

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
        for u in reply.uploads {
            print("upload \(u.uploadID) of \(u.name): \(RemoteFormat.bytes(Int(clamping: u.offset))) of \(RemoteFormat.bytes(Int(clamping: u.size))) since \(u.startedAt.prefix(19))")
        }
    }
}

/// `earshot remote catalog describe NAME`
struct RemoteCatalogDescribeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "describe", abstract: "One catalog's summary, references and media items.")

    @OptionGroup var remote: RemoteOptions
    @Argument(help: "The catalog's name (List shows them).") var name: String
    @Flag(help: "Print JSON (protobuf's JSON mapping of CatalogDescription).") var json = false

    func run() throws {
        var request = Earshot_V1_DescribeCatalogRequest()
        request.name = name
        let reply = try remote.call(Methods.Catalogs.describe, request)
        if json { return print(RemoteFormat.json(reply)) }
        let s = reply.summary
        print("\(RemoteFormat.nameAndVersion(s)): \(RemoteFormat.catalogState(s)), \(s.referenceCount) references, \(RemoteFormat.bytes(Int(clamping: s.byteCount)))")
        if !s.failure.isEmpty { print("  failure:   \(s.failure)") }
        print("  sha256:    \(s.sha256.isEmpty ? "-" : s.sha256)")
        print("  installed: \(s.installedAt.isEmpty ? "-" : s.installedAt)")
        let signer = RemoteFormat.wasNotRead(s) ? "unknown (the box could not read the catalog)"
            : s.signerKey.isEmpty ? "nobody (unsigned)" : s.signerName.isEmpty ? s.signerKey : "\(s.signerName) (\(s.signerKey))"
        print("  signed by: \(signer)")
        for r in reply.references {
            print("reference \(r.index): \(String(format: "%.1f", r.durationSeconds)) s")
            for item in r.mediaItems { print("  - \(item.title.isEmpty ? item.id : item.title)") }
        }
    }
}

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

struct RemoteCatalogEnableCommand: RemoteCatalogNameCommand {
    static let configuration = CommandConfiguration(commandName: "enable", abstract: "Make matches search a catalog (kept across restarts).")
    @OptionGroup var remote: RemoteOptions
    @Argument(help: "The catalog's name.") var name: String

    func run() throws {
        let s = try remote.call(Methods.Catalogs.enable, request)
        print("\(RemoteFormat.nameAndVersion(s)): \(RemoteFormat.catalogState(s))")
    }
}

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
