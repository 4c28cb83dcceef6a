import ArgumentParser
import Dispatch
import EarshotSync
import EarshotTransport
import EarshotWire
import Foundation

/// `earshot remote`: drive an `earshotd` over the network, as a thin client.
struct RemoteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remote",
        abstract: "Talk to an earshotd daemon: prepare, match, stream results, show or watch its state.",
        discussion: """
            The daemon answers RPC on --server (its rpc.listen, default tcp://127.0.0.1:7400) and \
            publishes events on --events (its events.listen; by default the --server port + 1).

            --server may also name a box on the LAN (`earshot remote discover` lists them); its \
            announced server key is used unless --server-key gives one.

            Examples:
              earshot remote prepare
              earshot remote discover
              earshot remote match --server "Living room" --key tv-app.key
              earshot remote match --server tcp://tv-box.local:7400
              earshot remote stream --json
              earshot remote state
              earshot remote watch --server tcp://tv-box.local:7400
              earshot remote catalog push show.earcat --enable
              earshot remote cues
              earshot remote library add --from-last-match
              earshot remote match --server tcp://tv-box.local:7400 --server-key server.public --key tv-app.key

            The daemon uses CURVE by default: give its public key (--server-key) and a client key \
            (--key, made by `earshot keygen`) whose public half is in the daemon's allow-list.

            Exit status: 0 on success (for `match`: a match), 1 when `match` found none, 2 on \
            usage errors, 5 when the daemon did not answer in time or answered with an error \
            (the message says which, with the gRPC status name).
            """,
        subcommands: [RemotePrepareCommand.self, RemoteMatchCommand.self, RemoteStreamCommand.self,
                      RemoteStateCommand.self, RemoteWatchCommand.self, RemoteCatalogCommand.self, RemoteCuesCommand.self,
                      RemoteLibraryCommand.self, RemoteDiscoverCommand.self, RemoteDashboardCommand.self]
    )
}
