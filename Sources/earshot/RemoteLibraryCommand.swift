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

/// Which items `list` and `export` read.
struct LibraryFilterOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Only items of this catalog.", valueName: "name")) var catalog = ""
    @Option(help: ArgumentHelp("Only items matched at or after this date (ISO 8601: 2026-11-26 or 2026-11-26T20:00:00Z).", valueName: "date"))
    var since: String?
    @Option(help: ArgumentHelp("Only items matched before this date.", valueName: "date")) var until: String?
    @Option(help: ArgumentHelp("Only items whose media item has this custom property; the value is JSON (a string needs quotes: genre='\"jazz\"').",
                               valueName: "key=json"))
    var property: String?
    @Option(help: ArgumentHelp("Admin: another owner's library (its allow-list name).", valueName: "name")) var owner = ""

    func validate() throws {
        for (name, value) in [("--since", since), ("--until", until)] {
            if let value, ISODate.parse(value) == nil { throw ValidationError("\(name): \"\(value)\" is not a date like 2026-11-26 or 2026-11-26T20:00:00Z") }
        }
        if let property, !property.contains("=") { throw ValidationError("--property must be key=json, e.g. genre='\"jazz\"'") }
    }

    func request(pageSize: UInt32) -> Earshot_V1_LibraryItemsRequest {
        var r = Earshot_V1_LibraryItemsRequest()
        r.pageSize = pageSize
        r.catalog = catalog
        r.owner = owner
        if let since, let d = ISODate.parse(since) { r.matchedFromUnixMs = Int64(d.timeIntervalSince1970 * 1000) }
        if let until, let d = ISODate.parse(until) { r.matchedBeforeUnixMs = Int64(d.timeIntervalSince1970 * 1000) }
        if let property, let eq = property.firstIndex(of: "=") {
            r.propertyKey = String(property[..<eq])
            r.propertyValueJson = String(property[property.index(after: eq)...])
        }
        return r
    }
}

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

/// Reads Items pages.
enum LibraryPages {
    static func read(_ remote: RemoteOptions, _ request: Earshot_V1_LibraryItemsRequest,
                     all: Bool) throws -> ([Earshot_V1_LibraryItem], Earshot_V1_LibraryItemsResponse) {
        try runBlocking { () throws in
            let client = try remote.client()
            defer { client.close() }
            var request = request
            var items: [Earshot_V1_LibraryItem] = []
            while true {
                let page: Earshot_V1_LibraryItemsResponse
                do throws(RpcError) { page = try await client.call(Methods.Library.items, request) } catch { throw remote.failure(error) }
                items += page.items
                if !all || page.nextPageToken.isEmpty { return (items, page) }
                request.pageToken = page.nextPageToken
            }
        }
    }
}

/// `earshot remote library add`
struct RemoteLibraryAddCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add", abstract: "Add a match to your library: the one the daemon follows now, or a new one.",
        discussion: """
            --from-last-match adds the item the daemon is following (its session's current match); \
            --match asks the daemon to match now (operator key) and adds the result in the same call. \
            Exit status 1 when there is nothing to add.
            """)

    @OptionGroup var remote: RemoteOptions
    @Flag(name: .customLong("from-last-match"), help: "Add the item the daemon matched last and follows now.") var fromLastMatch = false
    @Flag(name: .customLong("match"), help: "Match now and add the result (needs an operator or admin key).") var matchNow = false
    @Flag(help: "Print the reply as JSON.") var json = false

    func validate() throws {
        guard fromLastMatch != matchNow else { throw ValidationError("say what to add: --from-last-match or --match") }
    }

    func run() throws {
        if matchNow {
            var request = Earshot_V1_MatchRequest()
            request.addToLibrary = true
            let result = try remote.call(Methods.Recognizer.match, request)
            if json { print(RemoteFormat.json(result)) } else { RemoteFormat.lines(result).forEach { print($0) } }
            if result.outcome != .match { throw ExitCode(ExitStatus.noMatch.rawValue) }
            let status = result.library
            guard status.code == 0 else {
                throw CLIFailure("\(remote.server): the match was not added: \(RpcStatusCode(rawValue: status.code)): \(status.message)", status: .remote)
            }
            if !json { print("added \(status.itemIds.joined(separator: " ")) (library version \(status.version))") }
            return
        }
        let snapshot = try remote.call(Methods.Session.getSnapshot, Earshot_V1_GetSnapshotRequest())
        guard snapshot.hasCurrentMatch else {
            Terminal.error("earshot: the daemon follows no match now; nothing added (try --match)")
            throw ExitCode(ExitStatus.noMatch.rawValue)
        }
        var new = Earshot_V1_NewLibraryItem()
        new.item = snapshot.currentMatch
        new.matchedAtUnixMs = snapshot.takenAtUnixMs
        var request = Earshot_V1_AddLibraryItemsRequest()
        request.items = [new]
        let reply = try remote.call(Methods.Library.add, request)
        if json { print(RemoteFormat.json(reply)); return }
        for item in reply.items { print("added \(item.id)  \(RemoteFormat.name(item.item.mediaItem))") }
        print("library version \(reply.version), \(reply.itemCount) item\(reply.itemCount == 1 ? "" : "s")")
    }
}

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

/// `earshot remote library owners`
struct RemoteLibraryOwnersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "owners", abstract: "Admin: every library on the daemon, with its size and whether its key is still allowed.")

    @OptionGroup var remote: RemoteOptions
    @Flag(help: "Print the reply as JSON.") var json = false

    func run() throws {
        let reply = try remote.call(Methods.Library.listOwners, Earshot_V1_ListLibraryOwnersRequest())
        if json { print(RemoteFormat.json(reply)); return }
        if reply.owners.isEmpty { print("no libraries yet"); return }
        let rows = reply.owners.map { o in
            [o.name, "\(o.itemCount)", RemoteFormat.bytes(Int(o.bytes)), "\(o.version)",
             o.changedAtUnixMs == 0 ? "-" : ISODate.render(Date(timeIntervalSince1970: Double(o.changedAtUnixMs) / 1000)),
             o.allowed ? "yes" : "no (removed from the allow-list)", o.ownerHash]
        }
        RemoteFormat.table(["OWNER", "ITEMS", "SIZE", "VERSION", "CHANGED", "ALLOWED", "NOTICE HASH"], rows).forEach { print($0) }
    }
}

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

/// How library items, changes and notices are shown to people.
enum LibraryFormat {
    static func date(_ ms: Int64) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.dateFormat = "yyyy-MM-dd HH:mm"
        return f.string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
    }

    static func table(_ items: [Earshot_V1_LibraryItem]) -> [String] {
        RemoteFormat.table(["ID", "MATCHED", "ITEM", "CATALOG", "AT", "CONFIDENCE"], items.map { i in
            [i.id, date(i.matchedAtUnixMs), RemoteFormat.name(i.item.mediaItem), "\(i.item.catalog) v\(i.item.catalogVersion)",
             RemoteFormat.seconds(i.item.predictedCurrentMatchOffset), String(format: "%.2f", i.item.confidence)]
        })
    }

    static func kind(_ k: Earshot_V1_LibraryChange.Kind) -> String {
        switch k {
        case .added: "added"
        case .removed: "removed"
        case .cleared: "cleared"
        case .resync: "resync"
        case .current: "current"
        default: "?"
        }
    }

    static func change(_ c: Earshot_V1_LibraryChange) -> String {
        let head = "v\(c.version) \(kind(c.kind))"
        switch c.kind {
        case .added:
            // Items added then removed before this reader caught up are named by count only.
            var parts = c.items.map { "\($0.id) \(RemoteFormat.name($0.item.mediaItem))" }
            let gone = c.itemIds.count - c.items.count
            if gone > 0 { parts.append("\(Format.count(gone, "item")) removed since") }
            return "\(head): " + parts.joined(separator: "; ") + " — \(Format.count(Int(c.itemCount), "item")) now"
        case .removed: return "\(head): \(c.itemIds.joined(separator: " ")) — \(Format.count(Int(c.itemCount), "item")) now"
        case .cleared: return "\(head): an admin deleted every item"
        case .resync: return "\(head): too far behind, or the library was restored; list it again (\(Format.count(Int(c.itemCount), "item")))"
        case .current: return "\(head): up to date, \(Format.count(Int(c.itemCount), "item"))"
        default: return head
        }
    }

    static func notice(_ n: Earshot_V1_LibraryNotice) -> String {
        "library: owner \(n.ownerHash.prefix(8)) v\(n.version) \(kind(n.kind)) \(n.changed) → \(Format.count(Int(n.itemCount), "item"))"
    }
}
