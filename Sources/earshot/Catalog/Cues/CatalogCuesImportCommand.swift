import ArgumentParser
import EarshotAuthoring
import EarshotCore
import EarshotSystem
import Foundation

/// `earshot catalog cues import`.
struct CatalogCuesImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Set the cues of a reference from an .m3u8 playlist or a CSV.",
        discussion: """
            The file's format comes from its name (.m3u8 or .m3u: a playlist; .csv: CSV) or \
            from --format. Every cue is checked against the reference (it must start within \
            it; an interstitial needs exactly one of X-ASSET-URI and X-ASSET-LIST; …). On the \
            first error the command names the file and line and changes nothing; otherwise the \
            catalog is replaced atomically. Like every catalog edit, this drops an author \
            signature (`catalog sign` again afterwards).

            Playlist: every #EXT-X-DATERANGE tag is a cue; a tag repeating an ID adds attributes \
            to the earlier one. START-DATE is placed on the reference by subtracting the \
            playlist's first #EXT-X-PROGRAM-DATE-TIME before its first segment; a playlist \
            without one needs --origin, the date at which the reference starts. An interstitial \
            adds CLASS="com.apple.hls.interstitial" and X-ASSET-URI="…" or X-ASSET-LIST="…".

              #EXTM3U
              #EXT-X-PROGRAM-DATE-TIME:2024-05-01T20:00:00Z
              #EXT-X-DATERANGE:ID="b1",START-DATE="2024-05-01T20:12:30Z",DURATION=30
              #EXTINF:1800,
              episode.ts

            CSV: a header, then one row per cue. Columns: id, class, start (seconds), \
            duration, planned-duration, end-on-next (YES), asset-uri, asset-list, \
            resume-offset, playout-limit, restrict ("SKIP,JUMP"), cue ("PRE,ONCE"), snap \
            ("OUT,IN"), content-may-vary (YES/NO), timeline-occupies (POINT/RANGE), \
            timeline-style (HIGHLIGHT/PRIMARY), skip-control-offset, skip-control-duration, \
            skip-control-label-id; any other attribute as a column of its own name, the cell \
            written as in a playlist (\"\"\"text\"\"\", 0x1F, 1.5, ENUM). Only id and start are required.

              id,class,start,duration,asset-uri,restrict
              b1,com.apple.hls.interstitial,750,30,https://a.example/1.m3u8,"SKIP,JUMP"

            Examples:
              earshot catalog cues import -c show.earcat --reference 0 breaks.m3u8
              earshot catalog cues import -c show.earcat --reference ep2 live.m3u8 \\
                  --origin 2024-05-01T20:00:00Z
              earshot catalog cues import -c show.earcat --reference ep2 extra.csv --merge
            """
    )

    @Option(name: [.short, .long], help: ArgumentHelp("The catalog to edit.", valueName: "file.earcat"))
    var catalog: String

    @Option(help: ArgumentHelp("The reference: its index, or the id of one of its media items.", valueName: "N|media-item-id"))
    var reference: String

    @Argument(help: ArgumentHelp("The cues: an .m3u8 playlist or a CSV.", valueName: "cues.m3u8|cues.csv"))
    var file: String

    @Option(help: ArgumentHelp("The file's format, when its name does not tell (.m3u8, .m3u, .csv).", valueName: "m3u8|csv"))
    var format: CueFileFormat?

    @Option(help: ArgumentHelp(
        "Playlists: the date at which the reference starts (ISO 8601, 2024-05-01T20:00:00Z); "
            + "overrides the playlist's EXT-X-PROGRAM-DATE-TIME.", valueName: "date"))
    var origin: String?

    @Flag(exclusivity: .exclusive)
    var mode: CueImportMode = .replace

    func validate() throws {
        if let origin, ISODate.parse(origin) == nil {
            throw ValidationError("--origin \(origin) is not an ISO 8601 date-time with a zone (2024-05-01T20:00:00Z)")
        }
    }

    func run() throws {
        // Usage errors (the format, --origin with CSV) before the catalog is read.
        let format = try CueFileFormat.of(file, given: format)
        if origin != nil, format == .csv { throw CLIFailure("--origin applies to playlists; a CSV gives times in seconds", status: .usage) }
        var edited = try CatalogFile.readForEditing(catalog)
        let index = try CueReference.index(of: reference, in: edited.references.map(\.mediaItems), catalogPath: catalog)
        let duration = edited.references[index].signature.duration
        let imported = try CueFileFormat.readCues(file, given: format, origin: origin, referenceDuration: duration)
        var cues = imported
        var updated = 0
        if mode == .merge {
            cues = edited.references[index].cues
            for cue in imported {
                if let k = cues.firstIndex(where: { $0.id == cue.id }) {
                    cues[k] = cue
                    updated += 1
                } else {
                    cues.append(cue)
                }
            }
        }
        do { try edited.setCues(cues, forReferenceAt: index) } catch { throw CLIFailure.badInput(file, error) }
        try CatalogFile.write(edited, to: catalog)
        let what = mode == .merge
            ? "merged \(CueText.count(imported.count)) (\(updated) updated, \(imported.count - updated) new)"
            : "imported \(CueText.count(imported.count))"
        print("\(what) from \(file) into reference \(CueReference.name(index, edited.references[index].mediaItems)), which now has "
            + CueText.summary(CueSchedule.timeline(edited.references[index].cues, duration: duration)) + "; "
            + CatalogSummary.line(edited, path: catalog))
    }
}
