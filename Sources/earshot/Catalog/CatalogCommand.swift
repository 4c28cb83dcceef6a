import ArgumentParser

/// `earshot catalog`: the group of catalog commands.
struct CatalogCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "catalog",
        abstract: "Create, edit, inspect, export and merge custom catalogs (.earcat).",
        discussion: """
            A catalog holds reference signatures, each with one or more media items (title, \
            artist, time ranges, custom JSON properties, …) read from a media-items CSV; see \
            `earshot catalog create --help` for its columns. Edits (add, update, remove) verify \
            the whole catalog first and replace the file atomically.

            Example:
              earshot catalog create -o show.earcat ep1.wav ep2.wav --media-items items.csv
              earshot catalog add -c show.earcat ep3.wav
              earshot catalog display -c show.earcat
            """,
        subcommands: [
            CatalogCreateCommand.self, CatalogAddCommand.self, CatalogUpdateCommand.self, CatalogRemoveCommand.self,
            CatalogDisplayCommand.self, CatalogExportCommand.self, CatalogMergeCommand.self, CatalogSignCommand.self,
            CatalogCuesCommand.self, CatalogUpgradeCommand.self,
        ]
    )
}
