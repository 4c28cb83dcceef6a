import ArgumentParser
import EarshotCore

/// `earshot catalog add`: appends references to an existing catalog.
struct CatalogAddCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Add references (audio, video or .earsig files) and their media items to a catalog.",
        discussion: """
            Appends one reference per input, with media items from the CSV exactly as for \
            `catalog create` (see its help for the columns). New media-item ids must not be in \
            use in the catalog already. The catalog is verified before the edit and replaced atomically.

            Example:
              earshot catalog add -c show.earcat episode3.wav --media-items episode3.csv
            """
    )

    @Option(name: [.short, .long], help: ArgumentHelp("The catalog to add to.", valueName: "file.earcat"))
    var catalog: String

    @Argument(help: ArgumentHelp("Audio or video files, or .earsig signatures, one new reference each.", valueName: "inputs"))
    var inputs: [String] = []

    @Option(name: .customLong("media-items"), help: ArgumentHelp("Media-items CSV for the new references.", valueName: "items.csv"))
    var mediaItems: String?

    @OptionGroup var audioTrack: AudioTrackOptions
    @OptionGroup var quietOption: QuietOption

    func validate() throws {
        guard !inputs.isEmpty else { throw ValidationError("give at least one input file to add") }
    }

    func run() throws {
        var edited = try CatalogFile.readForEditing(catalog)
        let rows = try mediaItems.map(MediaItemsFile.read) ?? []
        let assignment = try MediaItemsFile.assign(rows, from: mediaItems, inputs: inputs)
        try ReferenceInputs.requireUniqueIDs(assignment.inputItems.flatMap { $0 }, in: edited, catalogPath: catalog,
                                             rows: rows, csvPath: mediaItems)
        try ReferenceInputs.requireAll(inputs)
        let signatures = try ReferenceInputs.signatures(of: inputs, track: audioTrack.choice, quiet: quietOption.quiet)
        try ReferenceInputs.add(signatures, items: assignment.inputItems, to: &edited, catalogPath: catalog)
        try CatalogFile.write(edited, to: catalog)
        print(CatalogSummary.line(edited, path: catalog))
    }
}
