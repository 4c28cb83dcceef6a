import ArgumentParser
import EarshotCore

/// `earshot catalog update`: replaces media items of existing references, adds new ones.
struct CatalogUpdateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "update",
        abstract: "Replace the media items of references, add references, or change query limits.",
        discussion: """
            CSV rows (columns as for `catalog create`) name their reference in one of three ways:
              - a `reference` cell with the index of an existing reference (see `catalog display`);
              - a `signature` cell naming one of the inputs given: a new reference is added;
              - a `signature` cell like 007-intro.earsig that names no input: existing reference 7 \
            (the names `catalog export` writes, so an exported CSV can be edited and fed back).
            Every existing reference named by some row gets exactly the items of its rows (the old \
            ones are dropped); references no row names keep theirs. Inputs no row names are added \
            with a default item. The catalog is verified before the edit and replaced atomically.

            Examples:
              earshot catalog update -c show.earcat --media-items fixed-titles.csv
              earshot catalog update -c show.earcat --media-items items.csv episode4.wav
              earshot catalog update -c show.earcat --max-query 20
            """
    )

    @Option(name: [.short, .long], help: ArgumentHelp("The catalog to update.", valueName: "file.earcat"))
    var catalog: String

    @Argument(help: ArgumentHelp("Audio or video files, or .earsig signatures to add as new references.", valueName: "inputs"))
    var inputs: [String] = []

    @Option(name: .customLong("media-items"), help: ArgumentHelp("Media-items CSV.", valueName: "items.csv"))
    var mediaItems: String?

    @OptionGroup var limits: QueryLimitOptions
    @OptionGroup var audioTrack: AudioTrackOptions
    @OptionGroup var quietOption: QuietOption

    func validate() throws {
        guard mediaItems != nil || !inputs.isEmpty || !limits.isEmpty else {
            throw ValidationError("nothing to update: give --media-items, input files, --min-query or --max-query")
        }
    }

    func run() throws {
        var edited = try CatalogFile.readForEditing(catalog)
        let rows = try mediaItems.map(MediaItemsFile.read) ?? []
        let assignment = try MediaItemsFile.assign(rows, from: mediaItems, inputs: inputs,
                                                   existingReferenceCount: edited.references.count)
        let replaced = Set(assignment.referenceItems.keys)
        let newItems = assignment.inputItems.flatMap { $0 } + assignment.referenceItems.values.flatMap { $0 }
        try ReferenceInputs.requireUniqueIDs(newItems, in: edited, except: replaced, catalogPath: catalog,
                                             rows: rows, csvPath: mediaItems)
        try limits.apply(to: &edited)
        try ReferenceInputs.requireAll(inputs)
        for (index, items) in assignment.referenceItems.sorted(by: { $0.key < $1.key }) {
            do { try edited.setMediaItems(items, forReferenceAt: index) } catch {
                throw CLIFailure.badInput(mediaItems ?? catalog, error)
            }
        }
        let signatures = try ReferenceInputs.signatures(of: inputs, track: audioTrack.choice, quiet: quietOption.quiet)
        try ReferenceInputs.add(signatures, items: assignment.inputItems, to: &edited, catalogPath: catalog)
        try CatalogFile.write(edited, to: catalog)
        print(CatalogSummary.line(edited, path: catalog))
    }
}
