import EarshotCore
import Foundation

extension MediaItemCSV {
    /// What a header names, and how its cells are read and written.
    enum Column: Equatable {
        case file, reference, id, title, subtitle, artist, genres, isrc, artworkURL, videoURL, webURL
        case explicitContent, creationDate, timeRanges, frequencySkewRanges
        /// A custom property; the associated value is the property key.
        case custom(String)

        static let standardProperties: [Column] = [
            .id, .title, .subtitle, .artist, .genres, .isrc, .artworkURL, .videoURL, .webURL, .explicitContent,
            .creationDate, .timeRanges, .frequencySkewRanges,
        ]

        static let byName: [String: Column] = {
            var names: [String: Column] = ["signature": .file, "file": .file, "reference": .reference]
            for c in standardProperties { names[c.headerName.lowercased()] = c }
            return names
        }()

        var headerName: String {
            switch self {
            case .file: "signature"
            case .reference: "reference"
            case .id: "id"
            case .title: "title"
            case .subtitle: "subtitle"
            case .artist: "artist"
            case .genres: "genres"
            case .isrc: "isrc"
            case .artworkURL: "artworkURL"
            case .videoURL: "videoURL"
            case .webURL: "webURL"
            case .explicitContent: "explicitContent"
            case .creationDate: "creationDate"
            case .timeRanges: "timeRanges"
            case .frequencySkewRanges: "frequencySkewRanges"
            // Keys that already look like an `x-` attribute keep their own name.
            case .custom(let key): key.lowercased().hasPrefix("x-") ? key : "custom." + key
            }
        }

        static func parseHeader(_ record: CSVRecords.Record) throws(EarshotError) -> [Column] {
            var columns: [Column] = []
            for (k, raw) in record.fields.enumerated() {
                let name = raw.trimmingCharacters(in: .whitespaces)
                let lower = name.lowercased()
                let column: Column
                if let known = byName[lower] {
                    column = known
                } else if lower.hasPrefix("custom.") {
                    column = .custom(String(name.dropFirst("custom.".count)))
                } else if lower.hasPrefix("x-") {
                    column = .custom(name)
                } else if name.isEmpty {
                    throw .catalogInvalid("line \(record.line), column \(k + 1): the header has an empty column name")
                } else {
                    throw .catalogInvalid(
                        "line \(record.line), column \(name): unknown column; known columns are signature (or file), reference, "
                            + standardProperties.map(\.headerName).joined(separator: ", ")
                            + ", and custom properties named custom.<key> or x-<key>")
                }
                if case .custom(let key) = column, key.isEmpty || key.lowercased() == "x-" {
                    throw .catalogInvalid("line \(record.line), column \(name): a custom property needs a key after the prefix")
                }
                guard !columns.contains(column) else {
                    throw .catalogInvalid("line \(record.line), column \(name): the column appears twice")
                }
                columns.append(column)
            }
            return columns
        }

        /// Reads one cell into `row`. Empty (or all-blank) cells leave the row untouched.
        func apply(_ cell: String, to row: inout Row) throws(EarshotError) {
            guard !cell.isEmpty else { return }
            let trimmed = cell.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !trimmed.isEmpty else { return }
            let line = row.line, name = headerName
            let fail = { (problem: String) -> EarshotError in .catalogInvalid("line \(line), column \(name): \(problem)") }
            switch self {
            case .file: row.file = trimmed
            case .reference:
                guard let index = Int(trimmed), index >= 0 else {
                    throw fail("\"\(trimmed)\" is not a reference index (0, 1, 2, …)")
                }
                row.reference = index
            case .id: row.item.id = trimmed
            case .title: row.item.title = cell
            case .subtitle: row.item.subtitle = cell
            case .artist: row.item.artist = cell
            case .isrc: row.item.isrc = trimmed
            case .artworkURL: row.item.artworkURL = try Self.url(trimmed, fail)
            case .videoURL: row.item.videoURL = try Self.url(trimmed, fail)
            case .webURL: row.item.webURL = try Self.url(trimmed, fail)
            case .genres:
                row.item.genres = cell.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
                    .filter { !$0.isEmpty }
            case .explicitContent:
                switch trimmed.lowercased() {
                case "true", "yes", "1": row.item.explicitContent = true
                case "false", "no", "0": row.item.explicitContent = false
                default: throw fail("\"\(trimmed)\" is not a boolean; write true/false, yes/no or 1/0")
                }
            case .creationDate:
                guard let date = ISODate.parse(trimmed) else {
                    throw fail("\"\(trimmed)\" is not an ISO 8601 date (2024-05-01) or date-time (2024-05-01T20:15:00Z)")
                }
                row.item.creationDate = date
            case .timeRanges: row.item.timeRanges = try RangeList.parse(trimmed, fail)
            case .frequencySkewRanges: row.item.frequencySkewRanges = try RangeList.parse(trimmed, fail)
            case .custom(let key):
                row.item.customProperties[key] = try Self.json(trimmed, fail)
            }
        }

        func render(_ row: Row) -> String {
            let item = row.item
            switch self {
            case .file: return row.file ?? ""
            case .reference: return row.reference.map(String.init) ?? ""
            case .id: return item.id
            case .title: return item.title ?? ""
            case .subtitle: return item.subtitle ?? ""
            case .artist: return item.artist ?? ""
            case .isrc: return item.isrc ?? ""
            case .artworkURL: return item.artworkURL ?? ""
            case .videoURL: return item.videoURL ?? ""
            case .webURL: return item.webURL ?? ""
            case .genres: return item.genres.joined(separator: ";")
            case .explicitContent: return item.explicitContent.map { $0 ? "true" : "false" } ?? ""
            case .creationDate: return item.creationDate.map(ISODate.render) ?? ""
            case .timeRanges: return RangeList.render(item.timeRanges)
            case .frequencySkewRanges: return RangeList.render(item.frequencySkewRanges)
            case .custom(let key): return item.customProperties[key].map(\.jsonText) ?? ""
            }
        }

        private static func url(_ text: String, _ fail: (String) -> EarshotError) throws(EarshotError) -> String {
            guard let url = URL(string: text), let scheme = url.scheme, !scheme.isEmpty else {
                throw fail("\"\(text)\" is not an absolute URL")
            }
            return text
        }

        private static func json(_ text: String, _ fail: (String) -> EarshotError) throws(EarshotError) -> JSONValue {
            guard let value = JSONValue(jsonText: text) else {
                let shown = text.count > 40 ? String(text.prefix(40)) + "…" : text
                // Unquoted text is the usual slip: JSON strings need quotes, doubled inside a CSV field.
                let looksLikeJSON = text.first.map { "{[\"-0123456789".contains($0) } ?? false
                    || ["true", "false", "null"].contains(where: text.hasPrefix)
                throw fail("not a valid JSON value: \(shown)"
                    + (looksLikeJSON ? "" : " (text needs JSON quotes: write \"\"\"text\"\"\" in the CSV)"))
            }
            return value
        }
    }
}
