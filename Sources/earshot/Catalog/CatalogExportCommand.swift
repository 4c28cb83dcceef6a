import ArgumentParser
import EarshotAuthoring
import EarshotCore
import EarshotSystem
import Foundation

/// `earshot catalog export`: signatures and CSV back out of a catalog.
struct CatalogExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export a catalog's signatures and media items to a folder.",
        discussion: """
            Writes one signature per reference, DIR/NNN-<first item id>.earsig (NNN is the \
            reference index), and DIR/media-items.csv naming those files, so that `catalog \
            create` rebuilds the same catalog, and `catalog update` takes the edited CSV back. \
            A catalog an earlier release made comes back from `create` indexed as this release \
            indexes (two targets per peak, fewer entries than it had); `catalog update`, \
            `add`, `remove` and `merge` keep each reference's index as it was built, and a \
            rebuild from audio gains this release's choice of peaks.

            Example:
              earshot catalog export -c show.earcat -o show/
              earshot catalog create -o copy.earcat show/*.earsig --media-items show/media-items.csv
            """
    )

    @Option(name: [.short, .long], help: ArgumentHelp("The catalog to export.", valueName: "file.earcat"))
    var catalog: String

    @Option(name: [.short, .long], help: ArgumentHelp("The folder to write into (created if missing).", valueName: "dir"))
    var output: String

    func run() throws {
        let contents = try CatalogFile.readForEditing(catalog)
        do {
            try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
        } catch {
            throw CLIFailure(output + ": cannot create the folder: \(error.localizedDescription)", status: .internalFailure)
        }
        let width = max(3, String(max(0, contents.references.count - 1)).count)
        var rows: [MediaItemCSV.Row] = []
        for (index, reference) in contents.references.enumerated() {
            let number = String(repeating: "0", count: max(0, width - String(index).count)) + String(index)
            let name = "\(number)-\(Self.fileNamePart(reference.mediaItems.first?.id ?? "reference")).earsig"
            let path = (output as NSString).appendingPathComponent(name)
            do { try AtomicFile.write(reference.signature.dataRepresentation, to: path) } catch { throw CLIFailure.output(path, error) }
            rows += reference.mediaItems.map { MediaItemCSV.Row(file: name, item: $0) }
        }
        let csvPath = (output as NSString).appendingPathComponent("media-items.csv")
        do { try AtomicFile.write(Array(MediaItemCSV.render(rows).utf8), to: csvPath) } catch { throw CLIFailure.output(csvPath, error) }
        print("\(output): \(contents.references.count) signature\(contents.references.count == 1 ? "" : "s") and media-items.csv "
            + "(\(rows.count) media item\(rows.count == 1 ? "" : "s"))")
        print("rebuild with: earshot catalog create -o CATALOG.earcat "
            + "--min-query \(contents.minimumQuerySignatureDuration) --max-query \(contents.maximumQuerySignatureDuration) "
            + "--media-items \(csvPath) \((output as NSString).appendingPathComponent("*.earsig"))")
    }

    /// An id made safe for a file name: letters, digits, '.', '_' and '-' only, at most 60.
    static func fileNamePart(_ id: String) -> String {
        let safe = String(id.unicodeScalars.prefix(60).map { s -> Character in
            s.isASCII && (s.properties.isAlphabetic || ("0"..."9").contains(s) || "._-".unicodeScalars.contains(s)) ? Character(s) : "_"
        })
        return safe.isEmpty || safe.hasPrefix(".") ? "item" + safe : safe
    }
}
