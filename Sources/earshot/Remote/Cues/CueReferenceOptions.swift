import ArgumentParser
import EarshotAuthoring
import EarshotCore
import EarshotSync
import EarshotTransport
import EarshotWire
import Foundation

/// Which reference a cue command is about.
struct CueReferenceOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The catalog's name on the daemon (with --reference).", valueName: "name"))
    var catalog = ""
    @Option(help: ArgumentHelp("The reference's index in the catalog.", valueName: "N"))
    var reference: UInt32 = 0
    @Option(name: .customLong("id"), help: ArgumentHelp("Or: the id of a media item of the reference.", valueName: "item-id"))
    var mediaItemID = ""

    var request: Earshot_V1_CueScheduleRequest {
        var r = Earshot_V1_CueScheduleRequest()
        r.catalog = catalog
        r.referenceIndex = reference
        r.mediaItemID = mediaItemID
        return r
    }

    func validate() throws {
        guard !catalog.isEmpty || !mediaItemID.isEmpty else {
            throw ValidationError("name the reference: --catalog NAME --reference N, or --id MEDIA_ITEM_ID")
        }
    }
}
