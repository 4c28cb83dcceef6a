import ArgumentParser
import EarshotAuthoring
import EarshotCore
import EarshotSync
import EarshotTransport
import EarshotWire
import Foundation

/// `earshot remote cues clear`
struct RemoteCuesClearCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clear", abstract: "Drop cues set at run time: the catalog's own cues serve again (operator or admin).")

    @OptionGroup var remote: RemoteOptions
    @OptionGroup var target: CueReferenceOptions

    func run() throws {
        let schedule = try remote.call(Methods.Cues.clearCues, target.request)
        print("\(CueFormat.programme(schedule.programme)): back to the catalog's \(schedule.cues.count) cue(s)")
    }
}
