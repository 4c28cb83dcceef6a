import ArgumentParser
import EarshotAuthoring
import EarshotCore
import EarshotSync
import EarshotTransport
import EarshotWire
import Foundation

/// `earshot remote cues schedule`
struct RemoteCuesScheduleCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schedule",
        abstract: "Show the cues of a reference (or, with no reference named, of the programme playing).")

    @OptionGroup var remote: RemoteOptions
    @Option(help: ArgumentHelp("The catalog's name on the daemon (with --reference).", valueName: "name")) var catalog = ""
    @Option(help: ArgumentHelp("The reference's index in the catalog.", valueName: "N")) var reference: UInt32 = 0
    @Option(name: .customLong("id"), help: ArgumentHelp("Or: the id of a media item of the reference.", valueName: "item-id"))
    var mediaItemID = ""
    @Flag(help: "Print the CueSchedule as JSON.") var json = false

    func run() throws {
        var request = Earshot_V1_CueScheduleRequest()
        request.catalog = catalog
        request.referenceIndex = reference
        request.mediaItemID = mediaItemID
        let schedule = try remote.call(Methods.Cues.getSchedule, request)
        if json {
            print(RemoteFormat.json(schedule))
            return
        }
        print("\(CueFormat.programme(schedule.programme)), \(RemoteFormat.seconds(schedule.referenceDuration)) long: "
            + "\(schedule.cues.count) cue(s)" + (schedule.source == .controller ? ", set by the controller" : " from the catalog"))
        for c in schedule.cues { print("  " + CueFormat.cue(c)) }
    }
}
