import ArgumentParser
import EarshotCore

/// `earshot catalog merge`: several catalogs into one.
struct CatalogMergeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "merge",
        abstract: "Merge catalogs into one.",
        discussion: """
            Writes a catalog holding every reference of the inputs, in order (like \
            SHCustomCatalog.add(from:)). Media-item ids used by several inputs are kept \
            (a note on stderr lists them). The query limits become the loosest of the inputs'. \
            Every input is fully verified first; the output may be one of the inputs.

            Example:
              earshot catalog merge -o season.earcat ep1.earcat ep2.earcat ep3.earcat
            """
    )

    @Option(name: [.short, .long], help: ArgumentHelp("The catalog file to write.", valueName: "file.earcat"))
    var output: String

    @Argument(help: ArgumentHelp("The catalogs to merge.", valueName: "catalogs"))
    var catalogs: [String] = []

    func validate() throws {
        guard !catalogs.isEmpty else { throw ValidationError("give the catalogs to merge") }
    }

    func run() throws {
        var merged = try CatalogFile.readForEditing(catalogs[0])
        for path in catalogs.dropFirst() {
            let next = try CatalogFile.readForEditing(path)
            do { try merged.merge(next) } catch { throw CLIFailure.badInput(path, error) }
        }
        // Allowed (catalogs are composed freely) but worth knowing before `catalog remove --id`.
        var seen = Set<String>(), repeated = Set<String>()
        for item in merged.references.flatMap(\.mediaItems) where !seen.insert(item.id).inserted { repeated.insert(item.id) }
        if !repeated.isEmpty {
            Terminal.error("note: media-item ids used in several references: " + repeated.sorted().prefix(10).joined(separator: ", ")
                + (repeated.count > 10 ? ", …" : ""))
        }
        try CatalogFile.write(merged, to: output)
        print(CatalogSummary.line(merged, path: output))
    }
}
