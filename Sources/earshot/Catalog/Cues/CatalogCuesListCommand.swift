import ArgumentParser
import EarshotAuthoring
import EarshotCore
import EarshotSystem
import Foundation

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
