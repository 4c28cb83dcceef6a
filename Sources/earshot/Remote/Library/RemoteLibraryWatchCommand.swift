import ArgumentParser
import EarshotCore
import EarshotSystem
import EarshotTransport
import EarshotWire
import Foundation

/// `earshot remote library watch`
struct RemoteLibraryWatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch", abstract: "Print your library's changes as they happen, until interrupted.",
        discussion: """
            With --from-version, first the changes after that version (resume where you left off), \
            then "current", then each change as it commits.
            """)

    @OptionGroup var remote: RemoteOptions
    @Option(name: .customLong("from-version"), help: ArgumentHelp("Start after this version (default: now).", valueName: "N"))
    var fromVersion: UInt64?
    @Flag(help: "One JSON object (LibraryChange) per line.") var json = false
    @Option(help: ArgumentHelp("Stop after this many seconds.", valueName: "seconds")) var duration: Double?

    func run() throws {
        let (remote, fromVersion, json, duration) = (self.remote, self.fromVersion, self.json, self.duration)
        try runUntilInterrupted(duration: duration) {
            let client = try remote.client()
            defer { client.close() }
            var request = Earshot_V1_WatchLibraryRequest()
            if let fromVersion {
                request.fromVersion = fromVersion
            } else {
                var first = Earshot_V1_LibraryItemsRequest()
                first.pageSize = 1
                do throws(RpcError) { request.fromVersion = try await client.call(Methods.Library.items, first).version } catch {
                    throw remote.failure(error)
                }
            }
            let limit = Duration.milliseconds(Int((duration ?? 86_400) * 1000) + 5000)
            do {
                for try await change in client.stream(Methods.Library.watchLibrary, request, timeout: limit) {
                    print(json ? RemoteFormat.json(change) : LibraryFormat.change(change))
                }
            } catch let error as RpcError {
                if error.code != .cancelled { throw remote.failure(error) }
            }
        }
    }
}
