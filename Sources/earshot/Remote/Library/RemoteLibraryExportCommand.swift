import ArgumentParser
import EarshotCore
import EarshotSystem
import EarshotTransport
import EarshotWire
import Foundation

/// `earshot remote library export`
struct RemoteLibraryExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export", abstract: "Write all of a library's items as one JSON document.",
        discussion: """
            The document is {"owner", "version", "exportedAt", "items": [LibraryItem…]}, items in \
            protobuf's JSON mapping, newest match first. -o writes the file atomically.
            """)

    @OptionGroup var remote: RemoteOptions
    @OptionGroup var filter: LibraryFilterOptions
    @Option(name: .shortAndLong, help: ArgumentHelp("Write to this file instead of standard output.", valueName: "file")) var output: String?

    func run() throws {
        let (items, last) = try LibraryPages.read(remote, filter.request(pageSize: 1000), all: true)
        let owner = filter.owner.isEmpty ? "(this key)" : filter.owner
        var text = "{\n  \"owner\": \(JSONValue.string(owner).jsonText),\n  \"version\": \(last.version),\n"
        text += "  \"exportedAt\": \(JSONValue.string(ISODate.render(Date())).jsonText),\n  \"items\": ["
        text += items.map { "\n    " + RemoteFormat.json($0) }.joined(separator: ",")
        text += items.isEmpty ? "]\n}\n" : "\n  ]\n}\n"
        guard let output else { print(text, terminator: ""); return }
        do throws(SystemError) { try AtomicFile.write(Array(text.utf8), to: output) } catch {
            throw CLIFailure(error.message, status: .internalFailure)
        }
        print("wrote \(Format.count(items.count, "item")) to \(output)")
    }
}
