import ArgumentParser
import EarshotCore
import EarshotSystem
import EarshotTransport
import EarshotWire
import Foundation

/// `earshot remote library remove`
struct RemoteLibraryRemoveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove", abstract: "Remove items from your library by id, all or none.",
        discussion: "An id that is not in your library fails the whole command (NOT_FOUND); nothing is removed then.")

    @OptionGroup var remote: RemoteOptions
    @Argument(help: ArgumentHelp("Item ids (from list).", valueName: "id")) var ids: [String]

    func validate() throws {
        guard !ids.isEmpty else { throw ValidationError("give the ids of the items to remove") }
    }

    func run() throws {
        var request = Earshot_V1_RemoveLibraryItemsRequest()
        request.ids = ids
        let reply = try remote.call(Methods.Library.remove, request)
        print("removed \(ids.count) item\(ids.count == 1 ? "" : "s"); library version \(reply.version), \(reply.itemCount) left")
    }
}
