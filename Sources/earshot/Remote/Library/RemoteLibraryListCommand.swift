import ArgumentParser
import EarshotCore
import EarshotSystem
import EarshotTransport
import EarshotWire
import Foundation

/// `earshot remote library list`
struct RemoteLibraryListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List your items, newest match first.")

    @OptionGroup var remote: RemoteOptions
    @OptionGroup var filter: LibraryFilterOptions
    @Option(help: ArgumentHelp("Show at most this many items (1 to 1000).", valueName: "N")) var limit: UInt32 = 50
    @Flag(help: "Every item, page after page.") var all = false
    @Flag(help: "One JSON object (LibraryItem) per line.") var json = false

    func validate() throws {
        guard (1...1000).contains(limit) else { throw ValidationError("--limit must be within 1…1000") }
    }

    func run() throws {
        let (remote, request, all) = (self.remote, filter.request(pageSize: all ? 1000 : limit), self.all)
        let (items, last) = try LibraryPages.read(remote, request, all: all)
        if json {
            items.forEach { print(RemoteFormat.json($0)) }
            return
        }
        let owner = filter.owner.isEmpty ? "your library" : "\(filter.owner)'s library"
        print("\(owner): \(last.itemCount) item\(last.itemCount == 1 ? "" : "s") (version \(last.version))\(items.count < last.itemCount ? ", showing \(items.count)" : "")")
        if !items.isEmpty { LibraryFormat.table(items).forEach { print($0) } }
        if !all, !last.nextPageToken.isEmpty { print("(more: --all, or --limit up to 1000)") }
    }
}
