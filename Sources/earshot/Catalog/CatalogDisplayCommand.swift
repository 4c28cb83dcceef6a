import ArgumentParser
import EarshotAuthoring
import EarshotCore
import EarshotCrypto

/// `earshot catalog display`: what a catalog holds.
struct CatalogDisplayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "display",
        abstract: "Show a catalog's query limits, references and media items.",
        discussion: """
            Verifies the whole file (every checksum), then prints the query limits, the number of \
            references, their total duration, the file size, its file format and the size of its \
            index (a format 1 file, from an earlier release, is named so, with how to upgrade it), \
            and, per reference, its index, \
            duration, peak count and media items with all their properties (in CSV syntax). \
            --json prints the same as one JSON object; media items appear in their stored form \
            (dates ISO 8601, ranges as [start, end] pairs).

            Example:
              earshot catalog display -c show.earcat
              earshot catalog display -c show.earcat --json | jq '.references[].mediaItems[].title'
            """
    )

    @Option(name: [.short, .long], help: ArgumentHelp("The catalog to show.", valueName: "file.earcat"))
    var catalog: String

    @Flag(help: "Print JSON instead of text.")
    var json = false

    func run() throws {
        let verified = try CatalogFile.verify(catalog)
        let mapped = verified.catalog
        let contents: CustomCatalog
        do { contents = try CustomCatalog(mapped) } catch { throw CLIFailure.badInput(catalog, error) }
        let itemCount = contents.references.reduce(0) { $0 + $1.mediaItems.count }
        if json {
            let references: [JSONValue] = contents.references.enumerated().map { index, reference in
                .object([
                    "index": .number(Double(index)),
                    "duration": .number(reference.signature.duration),
                    "peakCount": .number(Double(reference.signature.peaks.count)),
                    "mediaItems": .array(reference.mediaItems.map { .object(Format.json($0)) }),
                ])
            }
            print(Format.jsonText(.object([
                "file": .string(catalog),
                "fileSize": .number(Double(mapped.byteCount)),
                "formatVersion": .number(Double(mapped.formatVersion)),
                "indexSize": .number(Double(mapped.indexByteCount)),
                "sha256": .string(SHA256.hex(verified.sha256)),
                "signer": verified.signer.map { .string($0.publicKey) } ?? .null,
                "minimumQuerySignatureDuration": .number(contents.minimumQuerySignatureDuration),
                "maximumQuerySignatureDuration": .number(contents.maximumQuerySignatureDuration),
                "referenceCount": .number(Double(contents.references.count)),
                "mediaItemCount": .number(Double(itemCount)),
                "totalDuration": .number(contents.totalDuration),
                "references": .array(references),
            ])))
            return
        }
        print(catalog)
        print("  file size:     \(Format.count(mapped.byteCount)) bytes")
        print("  index:         \(Format.count(mapped.indexByteCount)) bytes, \(Format.count(mapped.entryCount)) landmarks")
        let current = MappedCatalog.currentFormatVersion
        print("  file format:   \(mapped.formatVersion)\(mapped.formatVersion < current ? " (an earlier release's: `earshot catalog upgrade \(catalog)` rewrites it in format \(current))" : "")")
        print("  sha256:        \(SHA256.hex(verified.sha256))")
        print("  signed by:     \(verified.signer?.publicKey ?? "nobody (unsigned)")")
        print("  query limits:  \(Format.seconds(contents.minimumQuerySignatureDuration)) to \(Format.seconds(contents.maximumQuerySignatureDuration))")
        print("  references:    \(contents.references.count), \(Format.seconds(contents.totalDuration)) in total")
        print("  media items:   \(itemCount)")
        for (index, reference) in contents.references.enumerated() {
            print("")
            print("reference \(index): \(Format.seconds(reference.signature.duration)), \(Format.count(reference.signature.peaks.count)) peaks")
            for item in reference.mediaItems {
                print("  - \(Format.name(of: item))")
                for field in MediaItemCSV.fields(of: item) {
                    print("      \(field.name): \(Terminal.oneLine(field.value))")
                }
            }
        }
    }
}
