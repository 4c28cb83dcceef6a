import ArgumentParser
import EarshotAuthoring
import EarshotCore
import EarshotSystem
import Foundation

/// `earshot catalog cues export`.
struct CatalogCuesExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write the cues of a reference as an .m3u8 playlist or a CSV.",
        discussion: """
            The format comes from --format, else from the name given with -o (.m3u8, .m3u, \
            .csv), else it is a playlist. Without -o the cues go to stdout. A playlist has the \
            reference as one segment and starts at --origin (default 2000-01-01T00:00:00.000Z, \
            its EXT-X-PROGRAM-DATE-TIME); each START-DATE is that date plus the cue's time, to \
            the millisecond or finer. `cues import` reads either file back into the same cues.

            Examples:
              earshot catalog cues export -c show.earcat --reference 0 -o breaks.m3u8
              earshot catalog cues export -c show.earcat --reference 1 --format csv > 1.csv
              earshot catalog cues export -c show.earcat --reference 0 \\
                  --origin 2024-05-01T20:00:00Z
            """
    )

    @Option(name: [.short, .long], help: ArgumentHelp("The catalog.", valueName: "file.earcat"))
    var catalog: String

    @Option(help: ArgumentHelp("The reference: its index, or the id of one of its media items.", valueName: "N|media-item-id"))
    var reference: String

    @Option(name: [.short, .long], help: ArgumentHelp("The file to write (default: stdout).", valueName: "out.m3u8|out.csv"))
    var output: String?

    @Option(help: ArgumentHelp("The format to write.", valueName: "m3u8|csv"))
    var format: CueFileFormat?

    @Option(help: ArgumentHelp("Playlists: the date the reference starts at (default 2000-01-01T00:00:00Z).", valueName: "date"))
    var origin: String?

    func validate() throws {
        if let origin, ISODate.parse(origin) == nil {
            throw ValidationError("--origin \(origin) is not an ISO 8601 date-time with a zone (2024-05-01T20:00:00Z)")
        }
    }

    func run() throws {
        let chosen = self.format
        let format = try output.map { try CueFileFormat.of($0, given: chosen) } ?? chosen ?? .m3u8
        if origin != nil, format == .csv { throw CLIFailure("--origin applies to playlists; a CSV gives times in seconds", status: .usage) }
        let mapped = try CatalogFile.map(catalog)
        let items = (0..<mapped.referenceCount).map(mapped.mediaItems(ofReference:))
        let index = try CueReference.index(of: reference, in: items, catalogPath: catalog)
        let schedule = mapped.cues(ofReference: index)
        let text: String
        do {
            switch format {
            case .m3u8:
                text = try CuePlaylist.render(schedule.cues, referenceDuration: schedule.referenceDuration,
                                              origin: origin.flatMap(ISODate.parse) ?? CuePlaylist.defaultOrigin)
            case .csv: text = try CueCSV.render(schedule.cues, referenceDuration: schedule.referenceDuration)
            }
        } catch {
            throw CLIFailure.badInput(catalog, "reference \(index): \(error.message)")
        }
        guard let output else {
            Terminal.outputRaw(text)
            return
        }
        do { try AtomicFile.write(Array(text.utf8), to: output) } catch { throw CLIFailure.output(output, error) }
        print("\(output): \(CueText.count(schedule.cues.count)) of reference \(CueReference.name(index, items[index]))")
    }
}
