import ArgumentParser
import EarshotCore
import EarshotCrypto
import EarshotStore
import EarshotSystem

/// `earshot catalog upgrade`: a catalog of an earlier format rewritten in the current one.
struct CatalogUpgradeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upgrade",
        abstract: "Rewrite catalogs of an earlier file format in the current one.",
        discussion: """
            Catalogs written by earlier releases (format 1) are still read and matched, with the \
            same answers, but format 2 is about 10 % smaller and holds up to 2386 hours of \
            references where format 1 held 596. Upgrading rebuilds the index from the peaks the \
            catalog stores, without the source audio; references, media items, cues and query \
            limits are kept as they are. Each file is verified first and replaced atomically: an \
            upgrade stopped at any point leaves the old file whole. A catalog already in the \
            current format is left untouched.

            A signed catalog's signature covers its old bytes. Give --key to sign the upgraded \
            file (in the same write, so a box that accepts only signed catalogs never sees it \
            unsigned), or --drop-signature to upgrade it unsigned; without either, a signed \
            catalog is left as it is. earshotd picks up a catalog upgraded in its catalogs folder \
            as it picks up any changed file.

            Examples:
              earshot catalog upgrade show.earcat
              earshot catalog upgrade --key studio.author.key signed/*.earcat
            """)

    @Argument(help: ArgumentHelp("The catalogs to upgrade (each rewritten in place).", valueName: "file.earcat"))
    var catalogs: [String]

    @Option(name: .customLong("key"), help: ArgumentHelp("Sign each upgraded catalog with this author's secret key file.",
                                                         valueName: "file.author.key"))
    var key: String?

    @Flag(name: .customLong("drop-signature"), help: "Upgrade signed catalogs without signing them again.")
    var dropSignature = false

    func validate() throws {
        guard !catalogs.isEmpty else { throw ValidationError("give the catalogs to upgrade") }
        guard key == nil || !dropSignature else { throw ValidationError("give --key or --drop-signature, not both") }
    }

    func run() throws {
        var signing: Ed25519.SigningKey?
        if let key {
            do { signing = try AuthorKeyFile.readSigningKey(key) } catch { throw CLIFailure(error.message, status: .usage) }
        }
        let current = MappedCatalog.currentFormatVersion
        for path in catalogs {
            let identity = FileIdentity(path: path)
            let verified = try CatalogFile.verify(path)
            let version = verified.catalog.formatVersion
            guard version != current else {
                print("\(path): already format \(current), left as it is")
                continue
            }
            if let signer = verified.catalog.signature, signing == nil, !dropSignature {
                throw CLIFailure.usage(path, "signed by \(Z85.encode(signer.publicKey)), and upgrading changes the bytes the signature "
                    + "covers: give --key AUTHOR.author.key to sign the upgraded file, or --drop-signature; nothing was changed")
            }
            if verified.catalog.totalDuration > 3600 {
                Terminal.error("earshot: rebuilding the index of \(path) (\(Format.seconds(verified.catalog.totalDuration)) of references)…")
            }
            let catalog: CustomCatalog
            var bytes: [UInt8]
            do {
                catalog = try CustomCatalog(verified.catalog)
                bytes = try catalog.dataRepresentation()
            } catch { throw CLIFailure.badInput(path, error) }
            if let signing {
                bytes += signing.catalogSignature(bodyDigest: bytes.withUnsafeBytes { SHA256.hash($0) }).encoded
            }
            // A file replaced meanwhile (an upload installed under this name) is not overwritten
            // with an upgrade of the one it replaced.
            guard FileIdentity(path: path) == identity else {
                throw CLIFailure.badInput(path, "the file changed while it was being upgraded; run the command again")
            }
            do { try AtomicFile.write(bytes, to: path) } catch { throw CLIFailure.output(path, error) }
            let signed = signing.map { " and signed as \(Z85.encode($0.publicKey))" } ?? ""
            print("upgraded \(path) from format \(version) to format \(current)\(signed); " + CatalogSummary.line(catalog, path: path))
        }
    }
}
