import EarshotCore

/// The one-line summary editing commands print after writing a catalog.
enum CatalogSummary {
    static func line(_ catalog: CustomCatalog, path: String) -> String {
        let items = catalog.references.reduce(0) { $0 + $1.mediaItems.count }
        return "\(path): \(catalog.references.count) reference\(catalog.references.count == 1 ? "" : "s"), "
            + "\(items) media item\(items == 1 ? "" : "s"), \(Format.seconds(catalog.totalDuration)) of audio"
    }
}
