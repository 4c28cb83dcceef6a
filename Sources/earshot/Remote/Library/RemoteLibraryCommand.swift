import ArgumentParser
import EarshotCore
import EarshotSystem
import EarshotTransport
import EarshotWire
import Foundation

/// `earshot remote library`: this client's library of matched items on the daemon (SHLibrary
/// on the box), and the admin's view of everyone's.
struct RemoteLibraryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "library",
        abstract: "Keep the items you matched in your library on the daemon: list, add, remove, watch, export.",
        discussion: """
            A library belongs to the client key that made the calls (its name in the daemon's \
            allow-list): nobody else sees or removes its items. Items are listed newest match first.

            Examples:
              earshot remote library                  (list: the newest 50)
              earshot remote library add --from-last-match
                                                      (what the daemon follows now)
              earshot remote library add --match      (match now, and add the result)
              earshot remote library list --since 2026-11-01 --property genre='"jazz"'
              earshot remote library remove 3f2a… 9c41…
              earshot remote library watch            (changes as they happen)
              earshot remote library export -o mine.json
            Admin keys only:
              earshot remote library owners
              earshot remote library export --owner kitchen-tablet -o kitchen.json
              earshot remote library delete-owner kitchen-tablet --yes
              earshot remote library backup
            """,
        subcommands: [RemoteLibraryListCommand.self, RemoteLibraryAddCommand.self, RemoteLibraryRemoveCommand.self,
                      RemoteLibraryWatchCommand.self, RemoteLibraryExportCommand.self, RemoteLibraryOwnersCommand.self,
                      RemoteLibraryDeleteOwnerCommand.self, RemoteLibraryBackupCommand.self],
        defaultSubcommand: RemoteLibraryListCommand.self
    )
}
