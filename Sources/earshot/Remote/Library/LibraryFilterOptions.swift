import ArgumentParser
import EarshotCore
import EarshotSystem
import EarshotTransport
import EarshotWire
import Foundation

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
