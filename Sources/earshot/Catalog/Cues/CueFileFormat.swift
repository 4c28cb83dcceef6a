import ArgumentParser
import EarshotAuthoring
import EarshotCore
import EarshotSystem
import Foundation

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
