import ArgumentParser
import EarshotCore
import EarshotSystem

/// `earshot catalog upgrade`: a catalog of an earlier format rewritten in the current one.
struct CatalogUpgradeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upgrade",
        abstract: "Rewrite catalogs of an earlier file format in the current one.",
        discussion: """
            Catalogs written by earlier releases (format 1) are still read and matched, but \
            format 2 holds up to 2386 hours of references where format 1 held 596, and its index \
            is smaller and faster to search. Upgrading rebuilds the index from the peaks the \
            catalog stores, without the source audio; references, media items, cues and query \
            limits are kept as they are. Each file is verified first and replaced atomically: \
            an upgrade stopped at any point leaves the old file whole. A catalog already in the \
            current format is left untouched.

            Upgrading a signed catalog removes its signature (it covered the old bytes): sign \
            it again with `earshot catalog sign`. earshotd picks up a catalog upgraded in its \
            catalogs folder as it picks up any changed file.

            Example:
              earshot catalog upgrade show.earcat
              earshot catalog upgrade /var/lib/earshot/catalogs/*.earcat
            """)

    @Argument(help: ArgumentHelp("The catalogs to upgrade (each rewritten in place).", valueName: "file.earcat"))
    var catalogs: [String]

    func validate() throws {
        guard !catalogs.isEmpty else { throw ValidationError("give the catalogs to upgrade") }
    }

    func run() throws {
        let current = MappedCatalog.currentFormatVersion
        for path in catalogs {
            let mapped = try CatalogFile.map(path)
            let version = mapped.formatVersion
            guard version != current else {
                print("\(path): already format \(current), left as it is")
                continue
            }
            if mapped.totalDuration > 3600 {
                Terminal.error("earshot: rebuilding the index of \(path) (\(Format.seconds(mapped.totalDuration)) of references)…")
            }
            let catalog: CustomCatalog
            do { catalog = try CustomCatalog(mapped) } catch { throw CLIFailure.badInput(path, error) }
            try CatalogFile.write(catalog, to: path)
            print("upgraded \(path) from format \(version) to format \(current); " + CatalogSummary.line(catalog, path: path))
        }
    }
}
