import ArgumentParser
import EarshotCore
import EarshotSystem
import EarshotTransport
import EarshotWire
import Foundation

/// `earshot remote library backup`
struct RemoteLibraryBackupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup", abstract: "Admin: have the daemon write a consistent copy of the library database on the box.",
        discussion: """
            SQLite's online backup, taken while the daemon serves, into <state>/library-backups/ \
            (the newest 5 are kept). To restore: stop earshotd, copy a backup to the library's path \
            (library.path, default <state>/library.db), start earshotd.
            """)

    @OptionGroup var remote: RemoteOptions
    @Flag(help: "Print the reply as JSON.") var json = false

    func run() throws {
        let reply = try remote.call(Methods.Library.backup, Earshot_V1_LibraryBackupRequest())
        if json { print(RemoteFormat.json(reply)); return }
        print("wrote \(reply.path) on the daemon's box: \(RemoteFormat.bytes(Int(reply.bytes))), \(reply.items) item\(reply.items == 1 ? "" : "s") of \(reply.owners) owner\(reply.owners == 1 ? "" : "s")")
        print("sha256 \(reply.sha256)")
    }
}
