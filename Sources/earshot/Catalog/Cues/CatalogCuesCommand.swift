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
