import ArgumentParser
import EarshotCore

/// `earshot catalog remove`: drops references or single media items.
struct CatalogRemoveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove",
        abstract: "Remove references, or single media items by id, from a catalog.",
        discussion: """
            --reference removes a whole reference (index as shown by `catalog display`); --id \
            removes the media items with that id, and a reference left without items is removed \
            too. Both may be repeated and combined; indices refer to the catalog before the edit. \
            Naming a reference or id that does not exist is an error and changes nothing.

            Examples:
              earshot catalog remove -c show.earcat --reference 2
              earshot catalog remove -c show.earcat --id q1 --id q2
            """
    )

    @Option(name: [.short, .long], help: ArgumentHelp("The catalog to edit.", valueName: "file.earcat"))
    var catalog: String

    @Option(name: .customLong("reference"), help: ArgumentHelp("Index of a reference to remove.", valueName: "N"))
    var references: [Int] = []

    @Option(name: .customLong("id"), help: ArgumentHelp("Id of a media item to remove.", valueName: "item-id"))
    var ids: [String] = []

    func validate() throws {
        guard !references.isEmpty || !ids.isEmpty else { throw ValidationError("give --reference N or --id ITEM_ID") }
        if let bad = references.first(where: { $0 < 0 }) { throw ValidationError("--reference \(bad) is not an index") }
    }

    func run() throws {
        var edited = try CatalogFile.readForEditing(catalog)
        let count = edited.references.count
        if let bad = references.first(where: { $0 >= count }) {
            throw CLIFailure.usage(catalog, "has no reference \(bad) (it has \(count): 0…\(count - 1))")
        }
        let known = Set(edited.references.flatMap { $0.mediaItems.map(\.id) })
        if let missing = ids.first(where: { !known.contains($0) }) {
            throw CLIFailure.usage(catalog, "has no media item with id \"\(missing)\"")
        }
        var doomed = Set(references)
        let removedIDs = Set(ids)
        let itemsBefore = edited.references.reduce(0) { $0 + $1.mediaItems.count }
        for (index, reference) in edited.references.enumerated() where !doomed.contains(index) {
            let kept = reference.mediaItems.filter { !removedIDs.contains($0.id) }
            if kept.isEmpty {
                doomed.insert(index)
            } else if kept.count != reference.mediaItems.count {
                do { try edited.setMediaItems(kept, forReferenceAt: index) } catch { throw CLIFailure.badInput(catalog, error) }
            }
        }
        for index in doomed.sorted(by: >) {
            do { try edited.removeReference(at: index) } catch { throw CLIFailure.badInput(catalog, error) }
        }
        try CatalogFile.write(edited, to: catalog)
        let removedItems = itemsBefore - edited.references.reduce(0) { $0 + $1.mediaItems.count }
        print("removed \(doomed.count) reference\(doomed.count == 1 ? "" : "s") and \(removedItems) media "
            + "item\(removedItems == 1 ? "" : "s"); " + CatalogSummary.line(edited, path: catalog))
    }
}
