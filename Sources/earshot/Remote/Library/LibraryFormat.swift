import ArgumentParser
import EarshotCore
import EarshotSystem
import EarshotTransport
import EarshotWire
import Foundation

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
