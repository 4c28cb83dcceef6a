import ArgumentParser
import EarshotAuthoring
import EarshotCore
import EarshotSync
import EarshotTransport
import EarshotWire
import Foundation

/// `earshot remote cues set`
struct RemoteCuesSetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Replace a reference's cues on the daemon from a playlist or CSV (operator or admin).",
        discussion: """
            The file is read as by `earshot catalog cues import` (.m3u8/.m3u: EXT-X-DATERANGE tags; \
            .csv: the cue CSV) and checked against the reference's length on the daemon. The cues \
            serve at once, are kept across restarts, and are dropped when the catalog is replaced \
            by a new version or by `earshot remote cues clear`.
            """)

    @OptionGroup var remote: RemoteOptions
    @OptionGroup var target: CueReferenceOptions
    @Option(help: ArgumentHelp("Playlists: the date at which the reference starts (ISO 8601), when the playlist has no EXT-X-PROGRAM-DATE-TIME.",
                               valueName: "date")) var origin: String?
    @Option(help: ArgumentHelp("The file's format, when its name does not tell (.m3u8, .m3u, .csv).", valueName: "m3u8|csv"))
    var format: CueFileFormat?
    @Argument(help: ArgumentHelp("The cues: a .m3u8 playlist or a .csv file.", valueName: "file")) var file: String

    func validate() throws {
        if let origin, ISODate.parse(origin) == nil {
            throw ValidationError("--origin \(origin) is not an ISO 8601 date-time with a zone (2024-05-01T20:00:00Z)")
        }
    }

    func run() throws {
        _ = try CueFileFormat.of(file, given: format)  // a usage error before the daemon is asked
        let current = try remote.call(Methods.Cues.getSchedule, target.request)
        let cues = try CueFileFormat.readCues(file, given: format, origin: origin, referenceDuration: current.referenceDuration)
        var request = Earshot_V1_SetCuesRequest()
        request.reference = target.request
        request.cues = cues.map { Earshot_V1_Cue($0) }
        let schedule = try remote.call(Methods.Cues.setCues, request)
        print("set \(schedule.cues.count) cue(s) on \(CueFormat.programme(schedule.programme))")
    }
}
