import EarshotCore
import EarshotWire
import Foundation
import SwiftProtobuf

/// How `earshot remote` prints wire messages: lines for people, or protobuf's JSON mapping.
enum RemoteFormat {
    static func json(_ message: some SwiftProtobuf.Message) -> String {
        var options = JSONEncodingOptions()
        options.alwaysPrintInt64sAsNumbers = true
        return (try? message.jsonString(options: options)) ?? "{}"
    }

    static func name(_ item: Earshot_V1_MediaItem) -> String {
        let title = item.title.isEmpty ? item.id : item.title
        return item.artist.isEmpty ? title : "\(title) — \(item.artist)"
    }

    static func seconds(_ s: Double) -> String {
        let sign = s < 0 ? "-" : ""
        let a = abs(s)
        return a >= 60 ? String(format: "%@%d:%05.2f", sign, Int(a) / 60, a.truncatingRemainder(dividingBy: 60))
            : String(format: "%@%.2f s", sign, a)
    }

    static func item(_ m: Earshot_V1_MatchedMediaItem, now offset: Double? = nil) -> String {
        String(format: "%@  [id %@, catalog %@]  at %@  (skew %+.2f %%, confidence %.2f)", name(m.mediaItem), m.mediaItem.id,
               m.catalog, seconds(offset ?? m.predictedCurrentMatchOffset), m.frequencySkew * 100, m.confidence)
    }

    /// A result as text lines.
    static func lines(_ r: Earshot_V1_MatchResult) -> [String] {
        switch r.outcome {
        case .match:
            return r.items.enumerated().map { k, m in "\(k == 0 ? (r.repeat ? "repeat:" : "match:") : "      ") \(item(m))" }
        case .noMatch: return ["no match"]
        case .error: return ["error: \(r.error.name) (\(r.error.code)): \(r.error.message)"]
        default: return ["(unknown outcome \(r.outcome.rawValue))"]
        }
    }

    static func state(_ s: Earshot_V1_SessionState) -> String {
        switch s {
        case .idle: "idle"
        case .prerecording: "prerecording"
        case .matching: "matching"
        default: "unknown"
        }
    }

    /// Where the current item is at `now`: the snapshot's offset moved on by the clock and speed.
    static func currentOffset(_ snapshot: Earshot_V1_SessionSnapshot, at now: Date = Date()) -> Double? {
        guard snapshot.hasCurrentMatch else { return nil }
        let m = snapshot.currentMatch
        let elapsed = now.timeIntervalSince1970 - Double(snapshot.takenAtUnixMs) / 1000
        return MatchedMediaItem.offset(m.predictedCurrentMatchOffset, timeSkew: m.timeSkew, after: max(0, elapsed))
    }

    static func snapshot(_ s: Earshot_V1_SessionSnapshot, now: Date = Date()) -> [String] {
        var out = ["state: \(state(s.state))" + String(format: "  (window %.1f s, heard %.1f s)", s.windowSeconds, s.heardSeconds)]
        if s.hasCurrentMatch {
            out.append("now playing: " + item(s.currentMatch, now: currentOffset(s, at: now)))
        } else {
            out.append("now playing: nothing recognised")
        }
        if !s.captureProblem.isEmpty { out.append("capture problem: \(s.captureProblem)") }
        let c = s.capture
        out.append("capture: \(c.source)  frames \(c.framesCaptured), xruns \(c.xruns), dropped \(c.droppedSamples), reopens \(c.reopenAttempts)")
        return out
    }

    /// "active", "disabled", "loading" or "failed".
    /// "show v3", or "show" for a catalog that never loaded (it has no version).
    static func nameAndVersion(_ c: Earshot_V1_CatalogSummary) -> String {
        c.version > 0 ? "\(c.name) v\(c.version)" : c.name
    }

    /// Whether the box could not read the catalog (FAILED): who signed it is not known.
    static func wasNotRead(_ c: Earshot_V1_CatalogSummary) -> Bool {
        c.state == .failed || c.sha256.isEmpty
    }

    /// Who signed a catalog, for a table: the author's name (or the key's start), "unsigned", or
    /// "-" when the box could not read the catalog (a FAILED one: it is not known).
    static func signer(_ c: Earshot_V1_CatalogSummary) -> String {
        if wasNotRead(c) { return "-" }
        if c.signerKey.isEmpty { return "unsigned" }
        return c.signerName.isEmpty ? String(c.signerKey.prefix(12)) + "…" : c.signerName
    }

    static func catalogState(_ c: Earshot_V1_CatalogSummary) -> String {
        switch c.state {
        case .active, .loaded: "active"
        case .disabled: "disabled"
        case .loading: "loading"
        case .failed: "FAILED"
        default: "unknown"
        }
    }

    /// "12.3 MB", "812 kB" or "95 B" (decimal units, as transfer rates are counted).
    static func bytes(_ n: Int) -> String {
        if n >= 1_000_000 { return String(format: "%.1f MB", Double(n) / 1e6) }
        if n >= 1000 { return String(format: "%.0f kB", Double(n) / 1e3) }
        return "\(n) B"
    }

    /// Left-aligned columns, two spaces apart.
    static func table(_ header: [String], _ rows: [[String]]) -> [String] {
        var widths = header.map(\.count)
        for row in rows { for (i, cell) in row.enumerated() where i < widths.count { widths[i] = max(widths[i], cell.count) } }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { i, c in i == cells.count - 1 ? c : c.padding(toLength: widths[i], withPad: " ", startingAt: 0) }
                .joined(separator: "  ")
        }
        return [line(header)] + rows.map(line)
    }
}
