import ArgumentParser
import EarshotAuthoring
import EarshotCore
import EarshotSystem
import Foundation

/// `earshot catalog cues`: the cues on the references' timelines (HLS interstitials and other
/// `EXT-X-DATERANGE` events), in and out of playlists and CSV.
struct CatalogCuesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cues",
        abstract: "Import, export and list the cues (HLS interstitials, chapters, …) on a reference's timeline.",
        discussion: """
            A cue is an event at a time of a reference: an ad break, a pre-roll, a chapter, a \
            question. It is written as an HLS EXT-X-DATERANGE tag (RFC 8216; interstitials have \
            CLASS="com.apple.hls.interstitial" and X-ASSET-URI or X-ASSET-LIST). The box carries \
            the cues to its clients and fires them when the programme reaches their time.

            Cues come from an .m3u8 playlist, where a tag's START-DATE minus the playlist's start \
            (its first EXT-X-PROGRAM-DATE-TIME before the first segment, or --origin) is the \
            time on the reference, or from a CSV with one row per cue and times in seconds. \
            Attributes Earshot does not know (X-COM-…, SCTE35-OUT, …) are kept and exported \
            again. docs/FORMATS.md has the details of both formats.

            --reference names a reference by its index (as `catalog display` shows it) or by \
            the id of one of its media items.

            Examples:
              earshot catalog cues import -c show.earcat --reference 0 breaks.m3u8
              earshot catalog cues import -c show.earcat --reference ep2 cues.csv --merge
              earshot catalog cues list -c show.earcat
              earshot catalog cues export -c show.earcat --reference ep2 -o ep2-cues.csv
              earshot catalog cues export -c show.earcat --reference 0 > breaks.m3u8
            """,
        subcommands: [CatalogCuesImportCommand.self, CatalogCuesExportCommand.self, CatalogCuesListCommand.self]
    )
}

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

/// `earshot catalog cues list`.
struct CatalogCuesListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "Show the cues of every reference (or of one).",
        discussion: """
            Per reference, a table of its cues in timeline order: id, class, start and end \
            (h:mm:ss.mmm; an END-ON-NEXT cue ends where the next of its class starts, a cue \
            without a length shows no end), flags (CUE, X-RESTRICT, END-ON-NEXT) and asset \
            (X-ASSET-URI, or X-ASSET-LIST marked "list:"). --json prints every field, with \
            times in seconds and the computed "end".

            Examples:
              earshot catalog cues list -c show.earcat
              earshot catalog cues list -c show.earcat --reference ep2 --json \\
                  | jq '.references[0].cues[].id'
            """
    )

    @Option(name: [.short, .long], help: ArgumentHelp("The catalog.", valueName: "file.earcat"))
    var catalog: String

    @Option(help: ArgumentHelp("Only this reference: its index, or the id of one of its media items.", valueName: "N|media-item-id"))
    var reference: String?

    @Flag(help: "Print JSON instead of text.")
    var json = false

    func run() throws {
        let mapped = try CatalogFile.map(catalog)
        let items = (0..<mapped.referenceCount).map(mapped.mediaItems(ofReference:))
        let indices = try reference.map { [try CueReference.index(of: $0, in: items, catalogPath: catalog)] } ?? Array(items.indices)
        if json {
            let references: [JSONValue] = indices.map { index in
                let schedule = mapped.cues(ofReference: index)
                let cues: [JSONValue] = schedule.cues.indices.map { k in
                    guard case .object(var object)? = JSONValue(encoding: schedule.cues[k]) else { return .null }
                    object["end"] = schedule.end(ofCueAt: k).map(JSONValue.number) ?? .null
                    return .object(object)
                }
                return .object([
                    "index": .number(Double(index)),
                    "duration": .number(schedule.referenceDuration),
                    "mediaItems": .array(items[index].map { .string($0.id) }),
                    "cues": .array(cues),
                ])
            }
            print(Format.jsonText(.object(["file": .string(catalog), "references": .array(references)])))
            return
        }
        for (n, index) in indices.enumerated() {
            let schedule = mapped.cues(ofReference: index)
            if n > 0 { print("") }
            print("reference \(CueReference.name(index, items[index])), \(Format.seconds(schedule.referenceDuration)): "
                + (schedule.isEmpty ? "no cues" : CueText.summary(schedule)))
            guard !schedule.isEmpty else { continue }
            var rows = [["id", "class", "start", "end", "flags", "asset"]]
            for (k, cue) in schedule.cues.enumerated() {
                let flags = cue.flags.map(\.rawValue) + cue.restrictions.map(\.rawValue) + (cue.endOnNext ? ["END-ON-NEXT"] : [])
                rows.append([
                    cue.id, cue.cueClass.isEmpty ? "-" : cue.cueClass, CueText.clock(cue.start),
                    schedule.end(ofCueAt: k).map(CueText.clock) ?? "-", flags.isEmpty ? "-" : flags.joined(separator: " "),
                    cue.assetURI ?? cue.assetList.map { "list: " + $0 } ?? "-",
                ].map(Terminal.oneLine))
            }
            let widths = rows[0].indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
            for row in rows {
                let cells = row.enumerated().map { column, cell in
                    column == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[column] - cell.count)
                }
                print("  " + cells.joined(separator: "  "))
            }
        }
    }
}

/// The cue file formats.
enum CueFileFormat: String, ExpressibleByArgument, CaseIterable {
    case m3u8, csv

    /// `given`, else the format `path`'s extension names; a usage error if neither tells.
    static func of(_ path: String, given: CueFileFormat?) throws(CLIFailure) -> CueFileFormat {
        if let given { return given }
        switch (path as NSString).pathExtension.lowercased() {
        case "m3u8", "m3u": return .m3u8
        case "csv": return .csv
        default: throw CLIFailure.usage(path, "cannot tell the format from the name; give --format m3u8 or --format csv")
        }
    }

    /// The cues of `path` (a regular file only, as every input), checked against a reference of
    /// `referenceDuration` seconds; `origin` places a playlist without EXT-X-PROGRAM-DATE-TIME.
    /// The one reader of cue files, for `catalog cues import` and `remote cues set`.
    static func readCues(_ path: String, given: CueFileFormat?, origin: String?, referenceDuration: Double) throws(CLIFailure) -> [Cue] {
        let format = try of(path, given: given)
        if origin != nil, format == .csv { throw CLIFailure("--origin applies to playlists; a CSV gives times in seconds", status: .usage) }
        let bytes = try InputFile.read(path)
        do {
            switch format {
            case .m3u8: return try CuePlaylist.parse(bytes: bytes, referenceDuration: referenceDuration, origin: origin.flatMap(ISODate.parse))
            case .csv: return try CueCSV.parse(bytes: bytes, referenceDuration: referenceDuration)
            }
        } catch {
            throw CLIFailure.badInput(path, error)
        }
    }
}

/// `--replace` / `--merge`.
enum CueImportMode: String, EnumerableFlag {
    case replace, merge

    static func help(for value: CueImportMode) -> ArgumentHelp? {
        switch value {
        case .replace: "The file's cues replace the reference's (the default)."
        case .merge: "A cue whose id the reference has replaces that cue; the others are added."
        }
    }
}

/// `--reference N|media-item-id`.
enum CueReference {
    /// The reference `text` names: an index (digits), else the one reference holding a media
    /// item with that id.
    static func index(of text: String, in items: [[MediaItem]], catalogPath: String) throws(CLIFailure) -> Int {
        guard !items.isEmpty else { throw CLIFailure.usage(catalogPath, "has no references") }
        if !text.isEmpty, text.allSatisfy(\.isASCII), text.allSatisfy(\.isNumber) {
            if let index = Int(text), items.indices.contains(index) { return index }
            // An item whose id is a number is still found when no reference has that index.
            if holding(text, items).isEmpty {
                throw CLIFailure.usage(catalogPath, "has no reference \(text) (it has \(items.count): 0…\(items.count - 1))")
            }
        }
        let found = holding(text, items)
        guard let first = found.first else {
            throw CLIFailure.usage(catalogPath, "has no media item with id \"\(text)\" (give --reference an index or a media item id)")
        }
        guard found.count == 1 else {
            throw CLIFailure.usage(catalogPath, "media item id \"\(text)\" is in references \(found.map(String.init).joined(separator: ", ")); give the index")
        }
        return first
    }

    private static func holding(_ id: String, _ items: [[MediaItem]]) -> [Int] {
        items.indices.filter { items[$0].contains { $0.id == id } }
    }

    /// "1 (ep2)": the index and the first media item's id.
    static func name(_ index: Int, _ items: [MediaItem]) -> String {
        items.first.map { "\(index) (\(Terminal.oneLine($0.id)))" } ?? "\(index)"
    }
}

/// How cue lists and times are shown to people.
enum CueText {
    static func count(_ n: Int) -> String { n == 1 ? "1 cue" : "\(n) cues" }

    /// "3 cues, 2 interstitials, from 0:00:00.000 to 0:12:30.000".
    static func summary(_ schedule: CueSchedule) -> String {
        guard !schedule.isEmpty else { return "no cues" }
        let interstitials = schedule.cues.filter { $0.cueClass == Cue.interstitialClass }.count
        let first = schedule.cues.map(\.start).min() ?? 0
        let last = schedule.cues.indices.map { schedule.end(ofCueAt: $0) ?? schedule.cues[$0].start }.max() ?? first
        return "\(count(schedule.cues.count)), \(interstitials) interstitial\(interstitials == 1 ? "" : "s"), "
            + "from \(clock(first)) to \(clock(last))"
    }

    /// h:mm:ss.mmm (to the nearest millisecond).
    static func clock(_ seconds: Double) -> String {
        guard seconds.isFinite, abs(seconds) < 1e12 else { return "\(seconds) s" }
        let ms = Int((abs(seconds) * 1000).rounded())
        let (h, m, s, f) = (ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000)
        func pad(_ v: Int, _ width: Int) -> String { String(repeating: "0", count: max(0, width - String(v).count)) + String(v) }
        return (seconds < 0 ? "-" : "") + "\(h):\(pad(m, 2)):\(pad(s, 2)).\(pad(f, 3))"
    }
}

extension CueSchedule {
    /// The schedule of cues a catalog already checked (a reference's stored cues).
    static func timeline(_ cues: [Cue], duration: Double) -> CueSchedule {
        (try? CueSchedule(cues, referenceDuration: duration)) ?? .empty(referenceDuration: duration)
    }
}
