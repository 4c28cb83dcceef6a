import EarshotCore
import EarshotCrypto
import EarshotStore
import EarshotSystem

/// Reading and writing `.earcat` files with the CLI's error conventions.
enum CatalogFile {
    /// Maps the catalog at `path` after the full check the daemon makes too (every checksum,
    /// the structure, the exact length): a catalog the daemon would leave out is refused here,
    /// whatever the command, and an edit never carries corruption into the rewritten file.
    static func map(_ path: String) throws(CLIFailure) -> MappedCatalog {
        try verify(path).catalog
    }

    /// The one verification the daemon makes too (`CatalogCheck`): structure, every checksum,
    /// the exact length, the SHA-256, and the author's signature if the catalog has one.
    static func verify(_ path: String) throws(CLIFailure) -> CatalogCheck.Verified {
        try InputFile.requireFile(path)
        try InputFile.requireMagic("EARCAT", of: path, kind: "an Earshot catalog")
        do { return try CatalogCheck.verify(path: path, trust: .anyone) } catch {
            throw .badInput(path, error.message.hasPrefix(path) ? String(error.message.dropFirst(path.count + 2)) : error.message)
        }
    }

    /// Reads the catalog at `path` for editing.
    static func readForEditing(_ path: String) throws(CLIFailure) -> CustomCatalog {
        let mapped = try map(path)
        do { return try CustomCatalog(mapped) } catch { throw .badInput(path, error) }
    }

    /// Writes `catalog` to `path` atomically: the old file stays whole until the new one is complete.
    /// Replacing a signed catalog says that the signature is gone (it covered the old contents)
    /// and how to sign again.
    static func write(_ catalog: CustomCatalog, to path: String) throws(CLIFailure) {
        // The structure alone: the trailer is found at the same cost for any catalog size.
        let signer = (try? MappedCatalog(contentsOf: path, verification: .structure))?.signature?.publicKey
        let bytes: [UInt8]
        do { bytes = try catalog.dataRepresentation() } catch {
            if case .catalogInvalid = error { throw .badInput(path, error) }
            throw .output(path, error)
        }
        do { try AtomicFile.write(bytes, to: path) } catch { throw .output(path, error) }
        if let signer {
            Terminal.error("earshot: warning: \(path) was signed by \(Z85.encode(signer)); the edit removed the signature, which covered the old contents: sign it again with `earshot catalog sign -c \(path) --key AUTHOR.author.key`")
        }
    }
}
