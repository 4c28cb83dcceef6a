import ArgumentParser
import EarshotTransport
import EarshotWire
import Foundation

/// `earshot remote catalog …`: the daemon's catalogs (admin keys; `list` any key).
struct RemoteCatalogCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "catalog",
        abstract: "Install, list, enable, disable and remove the catalogs of one box (or push to many).",
        discussion: """
            A box matches against every enabled catalog in its catalogs folder. `push` uploads a \
            catalog file (resumable: run it again after an interruption and it goes on where it \
            stopped), the box verifies it (SHA-256, structure, author signature if required) and \
            swaps it in while it keeps matching. These calls need an admin key, except `list`, \
            which any key may call.

            Examples:
              earshot remote catalog push show.earcat --enable
              earshot remote catalog push show.earcat --server tcp://tv1:7400 --server tcp://tv2:7400
              earshot remote catalog list
              earshot remote catalog disable old-show
              earshot remote catalog remove old-show
            """,
        subcommands: [RemoteCatalogPushCommand.self, RemoteCatalogListCommand.self, RemoteCatalogDescribeCommand.self,
                      RemoteCatalogEnableCommand.self, RemoteCatalogDisableCommand.self, RemoteCatalogRemoveCommand.self]
    )
}
