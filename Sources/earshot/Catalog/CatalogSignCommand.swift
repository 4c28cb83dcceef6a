import ArgumentParser
import EarshotCore
import EarshotCrypto
import EarshotStore
import EarshotSystem

/// `earshot catalog sign`: an author's Ed25519 signature appended to a catalog.
struct CatalogSignCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sign",
        abstract: "Sign a catalog with an author key, for boxes that accept only trusted authors.",
        discussion: """
            Verifies the catalog, then appends (or replaces) a 104-byte trailer holding the \
            author's public key and the Ed25519 signature of the catalog's SHA-256 \
            (docs/FORMATS.md). The file is rewritten atomically. A daemon whose \
            catalogs.trusted_authors file lists the key accepts the catalog; one that lists other \
            keys refuses it, from uploads and from its catalogs folder alike. Editing a catalog \
            afterwards (add, update, remove) drops the signature: sign again.

            Make an author key with `earshot keygen --author -o NAME`, and add the line of \
            NAME.author.pub to each box's trusted-authors file.

            Example:
              earshot keygen --author -o studio
              earshot catalog sign -c show.earcat --key studio.author.key
            """)

    @Option(name: [.short, .long], help: ArgumentHelp("The catalog to sign (rewritten in place).", valueName: "file.earcat"))
    var catalog: String

    @Option(name: .customLong("key"), help: ArgumentHelp("The author's secret key file.", valueName: "file.author.key"))
    var key: String

    func run() throws {
        let signing: Ed25519.SigningKey
        do { signing = try AuthorKeyFile.readSigningKey(key) } catch { throw CLIFailure(error.message, status: .usage) }
        let verified = try CatalogFile.verify(catalog)
        let body = verified.catalog.signedByteCount
        let signature = signing.catalogSignature(bodyDigest: verified.signedSHA256)
        var bytes: [UInt8]
        do { bytes = try AtomicFile.read(catalog) } catch { throw CLIFailure.badInput(catalog, error) }
        guard bytes.count == verified.byteCount else {
            throw CLIFailure.badInput(catalog, "the file changed while it was being signed; run the command again")
        }
        bytes.removeSubrange(body...)
        bytes += signature.encoded
        do { try AtomicFile.write(bytes, to: catalog) } catch { throw CLIFailure.output(catalog, error) }
        let replaced = verified.catalog.signature.map { $0.publicKey == signing.publicKey ? " (re-signed)" : " (replacing another author's signature)" } ?? ""
        print("signed \(catalog) as \(Z85.encode(signing.publicKey))\(replaced)")
        do {
            let check = try CatalogCheck.verify(path: catalog, trust: .anyone)
            print("sha256 \(SHA256.hex(check.sha256))")
        } catch {
            throw CLIFailure(catalog + ": the signed file does not verify: \(error.message)", status: .internalFailure)
        }
    }
}

extension Ed25519.SigningKey {
    /// The trailer that signs a catalog whose bytes before the trailer have SHA-256 `bodyDigest`.
    func catalogSignature(bodyDigest: [UInt8]) -> CatalogSignature {
        CatalogSignature(publicKey: publicKey, signature: sign(CatalogSignature.message(bodyDigest: bodyDigest)))
    }
}
