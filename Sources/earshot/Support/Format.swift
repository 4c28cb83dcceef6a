import EarshotCore
import Foundation

/// Number and item formatting for people and for `--json`.
enum Format {
    /// "12.34 s".
    static func seconds(_ value: Double) -> String { String(format: "%.2f s", value) }

    /// "+1.23 %" from a fraction (0.0123).
    static func percent(_ fraction: Double) -> String { String(format: "%+.2f %%", fraction * 100) }

    /// "1,234,567".
    /// "1 item", "12 items", "1,204 items": a count with its noun, singular for one.
    static func count(_ value: Int, _ noun: String) -> String {
        "\(count(value)) \(noun)\(value == 1 ? "" : "s")"
    }

    static func count(_ value: Int) -> String {
        let digits = String(value)
        var out = ""
        for (k, c) in digits.enumerated() {
            if k > 0, (digits.count - k) % 3 == 0 { out.append(",") }
            out.append(c)
        }
        return out
    }

    /// What to call an item: its title, subtitle and artist, or its id when it has no title.
    static func name(of item: MediaItem) -> String {
        var parts = [item.title ?? item.id]
        if let subtitle = item.subtitle { parts.append(subtitle) }
        if let artist = item.artist { parts.append(artist) }
        return parts.joined(separator: " — ")
    }

    /// The item as a JSON object: the `MediaItem` Codable form (dates as `ISODate` writes them,
    /// ranges as `[start, end]` pairs).
    static func json(_ item: MediaItem) -> [String: JSONValue] {
        guard case .object(let object)? = JSONValue(encoding: item) else { return ["id": .string(item.id)] }
        return object
    }

    /// Key-sorted JSON text on one line (for output that is one object per line).
    static func jsonLine(_ value: JSONValue) -> String { value.jsonText }

    /// `arguments` (the program first, as `earshot`) as one line a POSIX shell runs as given:
    /// words with anything but letters, digits and `_ - . / : = @ % + ,` are single-quoted.
    static func commandLine(_ arguments: [String]) -> String {
        let safe = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=@%+,")
        func word(_ s: String) -> String {
            !s.isEmpty && s.allSatisfy(safe.contains) ? s : "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'"
        }
        return (["earshot"] + arguments.dropFirst()).map(word).joined(separator: " ")
    }

    /// Pretty, key-sorted JSON text.
    static func jsonText(_ value: JSONValue) -> String { value.prettyJSONText }
}
