import EarshotCore

/// Reading and writing `.earcat` files with the CLI's error conventions.
enum CatalogFile {
    /// Maps the catalog at `path` (for matching and reading).
    static func map(_ path: String, verification: MappedCatalog.Verification) throws(CLIFailure) -> MappedCatalog {
        try InputFile.requireFile(path)
        try InputFile.requireMagic("EARCAT", of: path, kind: "an Earshot catalog")
        do { return try MappedCatalog(contentsOf: path, verification: verification) } catch { throw .badInput(path, error) }
    }

    /// Reads the catalog at `path` for editing, verifying every checksum first so that an
    /// edit never carries corruption into the rewritten file.
    static func readForEditing(_ path: String) throws(CLIFailure) -> CustomCatalog {
        let mapped = try map(path, verification: .full)
        do { return try CustomCatalog(mapped) } catch { throw .badInput(path, error) }
    }

    /// Writes `catalog` to `path` atomically: the old file stays whole until the new one is complete.
    static func write(_ catalog: CustomCatalog, to path: String) throws(CLIFailure) {
        let bytes: [UInt8]
        do { bytes = try catalog.dataRepresentation() } catch {
            if case .catalogInvalid = error { throw .badInput(path, error) }
            throw .output(path, error)
        }
        do { try AtomicFile.write(bytes, to: path) } catch { throw .output(path, error) }
    }
}
