import ArgumentParser
import EarshotCore
import EarshotSystem
import EarshotTransport
import EarshotWire
import Foundation

/// `earshot remote library delete-owner`
struct RemoteLibraryDeleteOwnerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete-owner", abstract: "Admin: delete all items of one owner (e.g. a phone that was reset).",
        discussion: "Export them first if they may be wanted: earshot remote library export --owner NAME -o NAME.json")

    @OptionGroup var remote: RemoteOptions
    @Argument(help: ArgumentHelp("The owner's allow-list name.", valueName: "name")) var owner: String
    @Flag(help: "Confirm: the items are deleted for good.") var yes = false

    func validate() throws {
        guard yes else { throw ValidationError("this deletes every item of \(owner) for good; add --yes to confirm") }
    }

    func run() throws {
        var request = Earshot_V1_DeleteLibraryOwnerRequest()
        request.owner = owner
        let reply = try remote.call(Methods.Library.deleteOwner, request)
        print("deleted the items of \(owner); its library is at version \(reply.version)")
    }
}
