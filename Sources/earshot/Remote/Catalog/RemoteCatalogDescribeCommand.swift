import ArgumentParser
import EarshotTransport
import EarshotWire
import Foundation

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
        if !s.notice.isEmpty { print("  notice:    \(s.notice)") }
        if s.formatVersion > 0 { print("  format:    \(s.formatVersion)") }
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
