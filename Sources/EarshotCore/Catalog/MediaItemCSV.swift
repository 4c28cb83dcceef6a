import Foundation

/// The media-items CSV that catalog authors write for `earshot catalog create/add/update` and
/// that `earshot catalog export` writes back (Apple's `shazam custom-catalog` takes the same
/// kind of file).
///
/// RFC 4180: comma-separated, fields quoted with `"` (a quote inside is written `""`, and quoted
/// fields may hold commas and line breaks), CRLF or LF line ends, UTF-8 with an optional BOM.
/// The first row is the header; header names are case-insensitive. One row per media item:
///
/// | column | value |
/// |---|---|
/// | `signature` (or `file`) | the input file the item belongs to (matched by file name) |
/// | `reference` | index of an existing catalog reference (only for `catalog update`) |
/// | `id` | the item's id; empty: derived from the input file name |
/// | `title`, `subtitle`, `artist`, `isrc` | text |
/// | `artworkURL`, `videoURL`, `webURL` | absolute URL |
/// | `genres` | `;`-separated list |
/// | `explicitContent` | `true`/`false`, `yes`/`no`, `1`/`0` |
/// | `creationDate` | ISO 8601 date (`2024-05-01`) or date-time (`2024-05-01T20:15:00Z`) |
/// | `timeRanges`, `frequencySkewRanges` | `;`-separated half-open ranges: `start-end` for non-negative numbers (`14-21`), or `start..<end` for any numbers (`-0.02..<-0.01`) |
/// | `custom.<key>` or `x-<key>` | a custom property: the cell is a JSON value |
///
/// An empty cell means "not set". Any other column is an error, so a typo in a header never
/// silently drops data.
public enum MediaItemCSV {
    /// One data row of the file.
    public struct Row: Sendable, Equatable {
        /// The `signature`/`file` cell: the input file this item belongs to; nil when empty.
        public var file: String?
        /// The `reference` cell: an existing catalog reference this item belongs to; nil when empty.
        public var reference: Int?
        /// The media item. Its `id` is empty when the row gives none; `assign` derives one.
        public var item: MediaItem
        /// Line of the file on which the row starts (1 is the header).
        public var line: Int

        /// A row for `render`, or as `parse` makes it (`line` is only used in messages).
        public init(file: String? = nil, reference: Int? = nil, item: MediaItem, line: Int = 0) {
            self.file = file
            self.reference = reference
            self.item = item
            self.line = line
        }
    }

    /// Reads a CSV file's bytes: checks that they are UTF-8, then parses them.
    public static func parse(bytes: [UInt8]) throws(EarshotError) -> [Row] {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw .catalogInvalid("the file is not UTF-8 text")
        }
        return try parse(text: text)
    }

    /// Parses the text of a media-items CSV into rows, in file order. Errors are `catalogInvalid`
    /// with a message that starts with the line number (and the column, when one is at fault).
    public static func parse(text: String) throws(EarshotError) -> [Row] {
        let records = try CSVRecords.split(text).filter { !$0.isBlank }
        guard let header = records.first else {
            throw .catalogInvalid("line 1: the file is empty; a header row is required")
        }
        let columns = try Column.parseHeader(header)
        var rows: [Row] = []
        rows.reserveCapacity(records.count - 1)
        for record in records.dropFirst() {
            guard record.fields.count == columns.count else {
                throw .catalogInvalid(
                    "line \(record.line): \(record.fields.count) fields, but the header has \(columns.count)")
            }
            var row = Row(item: MediaItem(id: ""), line: record.line)
            for (column, cell) in zip(columns, record.fields) {
                try column.apply(cell, to: &row)
            }
            rows.append(row)
        }
        return rows
    }

    /// The CSV text for `rows` (the header plus one line per row), in a form `parse` reads back
    /// into the same rows. Columns: `signature`, `reference` (only if a row has one), every
    /// standard property, then one `custom.<key>` (or `x-<key>`) column per custom key in use.
    /// Genres must not contain `;`, which separates them.
    public static func render(_ rows: [Row]) -> String {
        var columns: [Column] = [.file]
        if rows.contains(where: { $0.reference != nil }) { columns.append(.reference) }
        columns += Column.standardProperties
        let customKeys = Set(rows.flatMap { $0.item.customProperties.keys }).sorted()
        columns += customKeys.map { Column.custom($0) }
        var out = columns.map { CSVRecords.quoted($0.headerName) }.joined(separator: ",") + "\n"
        for row in rows {
            out += columns.map { CSVRecords.quoted($0.render(row)) }.joined(separator: ",") + "\n"
        }
        return out
    }

    /// The item's set properties as (column name, cell text) pairs in CSV syntax, in column
    /// order, `id` first: for showing an item to people the way its author wrote it.
    public static func fields(of item: MediaItem) -> [(name: String, value: String)] {
        let row = Row(item: item)
        let columns = Column.standardProperties + item.customProperties.keys.sorted().map { Column.custom($0) }
        return columns.compactMap { column in
            let value = column.render(row)
            return value.isEmpty ? nil : (column.headerName, value)
        }
    }
}

// MARK: - Records (RFC 4180 tokenizing)

/// Splits CSV text into records of raw fields; knows nothing about columns.
enum CSVRecords {
    struct Record {
        var line: Int
        var fields: [String]
        /// An empty line: a single empty, unquoted field.
        var isBlank: Bool
    }

    static func split(_ text: String) throws(EarshotError) -> [Record] {
        var scalars = Array(text.unicodeScalars)
        if scalars.first == "\u{FEFF}" { scalars.removeFirst() }
        var records: [Record] = []
        var fields: [String] = []
        var field = String.UnicodeScalarView()
        var line = 1, recordLine = 1, quoteLine = 1
        var inQuotes = false, closedQuote = false, anyQuote = false
        var i = 0

        func endField() {
            fields.append(String(field))
            field = String.UnicodeScalarView()
            closedQuote = false
        }
        func endRecord() {
            endField()
            records.append(Record(line: recordLine, fields: fields, isBlank: fields == [""] && !anyQuote))
            fields = []
            anyQuote = false
        }

        while i < scalars.count {
            let c = scalars[i]
            if inQuotes {
                if c == "\"" {
                    if i + 1 < scalars.count, scalars[i + 1] == "\"" {
                        field.append("\"")
                        i += 2
                        continue
                    }
                    inQuotes = false
                    closedQuote = true
                } else {
                    // Line breaks inside quotes are data; count them so later lines stay right.
                    if c == "\n" || (c == "\r" && !(i + 1 < scalars.count && scalars[i + 1] == "\n")) { line += 1 }
                    field.append(c)
                }
                i += 1
                continue
            }
            switch c {
            case ",":
                endField()
            case "\r", "\n":
                if c == "\r", i + 1 < scalars.count, scalars[i + 1] == "\n" { i += 1 }
                endRecord()
                line += 1
                recordLine = line
            case "\"":
                guard field.isEmpty, !closedQuote else {
                    throw .catalogInvalid(
                        "line \(line), field \(fields.count + 1): a quote inside an unquoted field; quote the whole field and write a quote as \"\"")
                }
                inQuotes = true
                anyQuote = true
                quoteLine = line
            default:
                guard !closedQuote else {
                    throw .catalogInvalid(
                        "line \(line), field \(fields.count + 1): text after the closing quote; write a quote inside a quoted field as \"\"")
                }
                field.append(c)
            }
            i += 1
        }
        if inQuotes {
            throw .catalogInvalid("line \(quoteLine), field \(fields.count + 1): the quoted field opened here is never closed")
        }
        if !fields.isEmpty || !field.isEmpty || closedQuote { endRecord() }
        return records
    }

    /// A field as written: quoted when it holds a comma, a quote or a line break.
    static func quoted(_ field: String) -> String {
        guard field.unicodeScalars.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else {
            return field
        }
        return "\"" + field.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}

// MARK: - Columns

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
            case .custom(let key): return item.customProperties[key].map(Self.renderJSON) ?? ""
            }
        }

        private static func url(_ text: String, _ fail: (String) -> EarshotError) throws(EarshotError) -> String {
            guard let url = URL(string: text), let scheme = url.scheme, !scheme.isEmpty else {
                throw fail("\"\(text)\" is not an absolute URL")
            }
            return text
        }

        private static func json(_ text: String, _ fail: (String) -> EarshotError) throws(EarshotError) -> JSONValue {
            do {
                return try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
            } catch {
                let shown = text.count > 40 ? String(text.prefix(40)) + "…" : text
                // Unquoted text is the usual slip: JSON strings need quotes, doubled inside a CSV field.
                let looksLikeJSON = text.first.map { "{[\"-0123456789".contains($0) } ?? false
                    || ["true", "false", "null"].contains(where: text.hasPrefix)
                throw fail("not a valid JSON value: \(shown)"
                    + (looksLikeJSON ? "" : " (text needs JSON quotes: write \"\"\"text\"\"\" in the CSV)"))
            }
        }

        static func renderJSON(_ value: JSONValue) -> String {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            // Encoding a JSONValue cannot fail: it holds only JSON types (non-finite numbers
            // cannot come from JSON text).
            guard let data = try? encoder.encode(value) else { return "null" }
            return String(decoding: data, as: UTF8.self)
        }
    }
}

// MARK: - Value syntaxes

/// `;`-separated half-open ranges: `a-b` (non-negative decimals) or `a..<b` (any finite numbers).
enum RangeList {
    static func parse(_ text: String, _ fail: (String) -> EarshotError) throws(EarshotError) -> [Range<Double>] {
        var ranges: [Range<Double>] = []
        for part in text.split(separator: ";") {
            let piece = part.trimmingCharacters(in: .whitespaces)
            if piece.isEmpty { continue }
            let bounds: (String, String)
            if let r = piece.range(of: "..<") {
                bounds = (String(piece[..<r.lowerBound]), String(piece[r.upperBound...]))
            } else {
                let halves = piece.split(separator: "-", omittingEmptySubsequences: false)
                guard halves.count == 2, halves.allSatisfy({ isPlainDecimal($0) }) else {
                    throw fail("\"\(piece)\" is not a range; write start-end (14-21) or, for negative numbers, start..<end (-0.02..<-0.01)")
                }
                bounds = (String(halves[0]), String(halves[1]))
            }
            guard let lo = number(bounds.0), let hi = number(bounds.1) else {
                throw fail("\"\(piece)\" has a bound that is not a number")
            }
            guard lo < hi else { throw fail("\"\(piece)\" is empty: the start must be below the end") }
            ranges.append(lo..<hi)
        }
        return ranges
    }

    static func render(_ ranges: [Range<Double>]) -> String {
        ranges.map { r in
            let lo = format(r.lowerBound), hi = format(r.upperBound)
            return isPlainDecimal(Substring(lo)) && isPlainDecimal(Substring(hi)) ? "\(lo)-\(hi)" : "\(lo)..<\(hi)"
        }.joined(separator: ";")
    }

    /// Digits with at most one decimal point: the only numbers the `a-b` form allows.
    private static func isPlainDecimal(_ s: Substring) -> Bool {
        let t = s.trimmingCharacters(in: .whitespaces)
        return !t.isEmpty && t.allSatisfy { $0.isASCII && ($0.isNumber || $0 == ".") }
            && t.filter { $0 == "." }.count <= 1 && t != "."
    }

    /// A finite decimal number (sign and exponent allowed; no hex, `inf` or `nan`).
    private static func number(_ s: String) -> Double? {
        let t = s.trimmingCharacters(in: .whitespaces)
        guard !t.isEmpty, t.allSatisfy({ $0.isASCII && ($0.isNumber || "+-.eE".contains($0)) }),
            let value = Double(t), value.isFinite
        else { return nil }
        return value
    }

    /// The shortest text that reads back as the same number; integers without ".0".
    static func format(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }
}

/// ISO 8601 dates (`2024-05-01`, midnight UTC) and date-times with a zone (`…T20:15:00Z`,
/// `…T20:15:00.250+02:00`). Parsed by hand so that impossible dates (February 30) are refused
/// rather than rolled over, and rendered by hand so that the two agree: both use the proleptic
/// Gregorian calendar (as ISO 8601 does; Foundation's formatter switches to the Julian calendar
/// before 1582), and a rendered date parses back to exactly the same `Date`.
enum ISODate {
    /// Seconds from 1970-01-01 to 2001-01-01, the reference date `Date` counts from.
    private static let referenceOffset = 978_307_200

    static func parse(_ text: String) -> Date? {
        let c = Array(text.utf8)
        func digits(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= c.count else { return nil }
            var value = 0
            for i in range {
                guard (0x30...0x39).contains(c[i]) else { return nil }
                value = value * 10 + Int(c[i] - 0x30)
            }
            return value
        }
        func byte(_ i: Int, _ expected: Character) -> Bool { i < c.count && c[i] == expected.asciiValue }
        guard let year = digits(0..<4), byte(4, "-"), let month = digits(5..<7), byte(7, "-"), let day = digits(8..<10),
            (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day)
        else { return nil }
        // Whole seconds are counted exactly in integers; the fraction is added last, once.
        var seconds = daysSinceEpoch(year: year, month: month, day: day) * 86_400
        var fraction = 0.0
        if c.count == 10 { return date(seconds, fraction) }

        guard byte(10, "T"), let hour = digits(11..<13), byte(13, ":"), let minute = digits(14..<16), byte(16, ":"),
            let second = digits(17..<19), hour < 24, minute < 60, second < 60
        else { return nil }
        seconds += hour * 3600 + minute * 60 + second
        var i = 19
        if byte(i, ".") {
            let first = i + 1
            i = first
            while i < c.count, (0x30...0x39).contains(c[i]) { i += 1 }
            guard i > first, let value = Double("0." + String(decoding: c[first..<i], as: UTF8.self)) else { return nil }
            fraction = value
        }
        if byte(i, "Z") {
            i += 1
        } else if byte(i, "+") || byte(i, "-") {
            guard let h = digits((i + 1)..<(i + 3)), byte(i + 3, ":"), let m = digits((i + 4)..<(i + 6)), h < 24, m < 60
            else { return nil }
            let offset = h * 3600 + m * 60
            seconds += byte(i, "+") ? -offset : offset
            i += 6
        } else {
            return nil  // a date-time without a zone is ambiguous
        }
        return i == c.count ? date(seconds, fraction) : nil
    }

    /// UTC, with as few parts as the value needs: a date at midnight, whole seconds, or the
    /// fraction with every digit needed to read back the same `Date`.
    static func render(_ date: Date) -> String {
        let interval = date.timeIntervalSinceReferenceDate
        guard interval.isFinite, abs(interval) < 1e14 else { return "" }
        let whole = interval.rounded(.down)
        let fraction = interval - whole  // exact: whole is interval's integer part
        let seconds = Int(whole) + referenceOffset
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let timeOfDay = seconds - days * 86_400
        let (year, month, day) = civil(daysSinceEpoch: days)
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        // Four digits, as `parse` reads (a year outside 0…9999 cannot come from a CSV).
        let yearText = (0...9999).contains(year) ? String(repeating: "0", count: 4 - String(year).count) + String(year) : String(year)
        var text = "\(yearText)-\(two(month))-\(two(day))"
        if timeOfDay == 0, fraction == 0 { return text }
        text += "T\(two(timeOfDay / 3600)):\(two(timeOfDay / 60 % 60)):\(two(timeOfDay % 60))"
        if fraction > 0 { text += "." + shortestDigits(of: fraction, after: whole, reading: interval) }
        return text + "Z"
    }

    /// The fewest decimals of `fraction` that `parse` (whole + 0.digits) turns back into
    /// `interval` exactly: "25" for a quarter, not the 16 digits of the binary value.
    private static func shortestDigits(of fraction: Double, after whole: Double, reading interval: Double) -> String {
        for places in 1...17 {
            let rounded = String(format: "%.\(places)f", fraction)
            guard rounded.hasPrefix("0."), let value = Double(rounded), whole + value == interval else { continue }
            var digits = rounded.dropFirst(2)
            while digits.count > 1, digits.last == "0" { digits = digits.dropLast() }
            return String(digits)
        }
        return String(plainDecimal(fraction).dropFirst(2))
    }

    /// The `Date` for whole seconds since 1970 plus a fraction: the integer part is moved to the
    /// reference date exactly, so `render` (which splits the same way) gets back the same digits.
    private static func date(_ secondsSince1970: Int, _ fraction: Double) -> Date {
        Date(timeIntervalSinceReferenceDate: Double(secondsSince1970 - referenceOffset) + fraction)
    }

    /// `value` (in [0, 1)) as "0.ddd…" with the shortest digits that read back the same, never in
    /// exponent notation.
    private static func plainDecimal(_ value: Double) -> String {
        let text = "\(value)"
        guard let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }), let exponent = Int(text[text.index(after: e)...]) else {
            return text
        }
        let digits = text[..<e].filter(\.isNumber)  // mantissa d.ddd → "dddd", value = 0.dddd × 10^(exponent + 1)
        return "0." + String(repeating: "0", count: max(0, -exponent - 1)) + digits
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 in the proleptic Gregorian calendar (the "days from civil" method).
    private static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The inverse of `daysSinceEpoch`.
    static func civil(daysSinceEpoch days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153  // March = 0
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

// MARK: - Rows to references

extension MediaItemCSV {
    /// Where the rows of a media-items CSV go when a catalog is built or edited.
    public struct Assignment: Sendable, Equatable {
        /// Media items of each input file, in input order. An input no row names gets one
        /// default item whose id and title are the file name without its extension.
        public var inputItems: [[MediaItem]]
        /// New media items of existing references (`catalog update`), by reference index.
        public var referenceItems: [Int: [MediaItem]]
    }

    /// The file name without folders and without its last extension.
    public static func stem(of path: String) -> String {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return name }
        return String(name[..<dot])
    }

    /// Distributes `rows` over `inputs` (file paths) and, when editing a catalog with
    /// `existingReferenceCount` references, over those references.
    ///
    /// A row belongs to the input whose file name equals its `signature` cell (or, failing that,
    /// whose name without extension equals the cell's). With a single input and no existing
    /// references, rows that name no file belong to it. When editing, a row belongs to the
    /// reference in its `reference` cell, or to reference N if its `signature` cell names no input
    /// and starts with N- (the names `catalog export` writes: `007-intro.earsig`).
    /// Rows without an id get the input's stem as id (with -1, -2, … when an input has several).
    /// Throws `catalogInvalid` naming the line of a row that names no input or reference, that
    /// names one ambiguously, or whose id repeats another row's.
    public static func assign(_ rows: [Row], inputs: [String], existingReferenceCount: Int? = nil) throws(EarshotError) -> Assignment {
        enum Target: Hashable { case input(Int), reference(Int) }
        let names = inputs.map { $0.split(separator: "/").last.map(String.init) ?? $0 }
        let stems = inputs.map(stem(of:))

        func target(of row: Row) throws(EarshotError) -> Target {
            if let reference = row.reference {
                guard let count = existingReferenceCount else {
                    throw .catalogInvalid("line \(row.line), column reference: a reference index is only valid when updating a catalog")
                }
                guard row.file == nil else {
                    throw .catalogInvalid("line \(row.line): give either a signature file or a reference index, not both")
                }
                guard reference < count else {
                    throw .catalogInvalid("line \(row.line), column reference: the catalog has no reference \(reference) (it has \(count))")
                }
                return .reference(reference)
            }
            guard let file = row.file else {
                if inputs.count == 1, existingReferenceCount == nil { return .input(0) }
                throw .catalogInvalid("line \(row.line), column signature: the row names no input file")
            }
            let name = file.split(separator: "/").last.map(String.init) ?? file
            var found = names.indices.filter { names[$0] == name }
            if found.isEmpty { found = stems.indices.filter { stems[$0] == stem(of: name) } }
            if found.count > 1 {
                throw .catalogInvalid("line \(row.line), column signature: \"\(file)\" matches several inputs ("
                    + found.map { inputs[$0] }.joined(separator: ", ") + ")")
            }
            if let index = found.first { return .input(index) }
            if let count = existingReferenceCount, let digits = name.split(separator: "-", maxSplits: 1).first,
                name.contains("-"), digits.allSatisfy(\.isASCII), let index = Int(digits), index >= 0, index < count
            {
                return .reference(index)
            }
            let given = inputs.isEmpty ? "no input files were given" : "inputs are " + names.joined(separator: ", ")
            throw .catalogInvalid("line \(row.line), column signature: \"\(file)\" names no input file (\(given))")
        }

        var grouped: [Target: [Row]] = [:]
        var order: [Target] = []
        for row in rows {
            let t = try target(of: row)
            if grouped[t] == nil { order.append(t) }
            grouped[t, default: []].append(row)
        }

        var idLines: [String: Int] = [:]
        func items(for t: Target, base: String) throws(EarshotError) -> [MediaItem] {
            let group = grouped[t] ?? []
            var out: [MediaItem] = []
            for (k, row) in group.enumerated() {
                var item = row.item
                if item.id.isEmpty { item.id = group.count == 1 ? base : "\(base)-\(k + 1)" }
                if let first = idLines[item.id] {
                    throw .catalogInvalid("line \(row.line), column id: id \"\(item.id)\" is already used on line \(first)")
                }
                idLines[item.id] = row.line
                do { try item.validate() } catch { throw error.prefixed("line \(row.line)") }
                out.append(item)
            }
            return out
        }

        var inputItems: [[MediaItem]] = []
        for (i, s) in stems.enumerated() {
            if grouped[.input(i)] == nil {
                inputItems.append([MediaItem(id: s, title: s)])
            } else {
                inputItems.append(try items(for: .input(i), base: s))
            }
        }
        var referenceItems: [Int: [MediaItem]] = [:]
        for case .reference(let r) in order {
            let base = grouped[.reference(r)]?.first?.file.map(stem(of:)) ?? "reference-\(r)"
            referenceItems[r] = try items(for: .reference(r), base: base)
        }
        // Default items of unnamed inputs may clash with ids given in the CSV, or with each other.
        var defaultIDs: [String: Int] = [:]
        for (i, s) in stems.enumerated() where grouped[.input(i)] == nil {
            if let line = idLines[s] {
                throw .catalogInvalid("line \(line), column id: id \"\(s)\" is also the default id of input \(inputs[i])")
            }
            if let other = defaultIDs[s] {
                throw .catalogInvalid("\(inputs[i]): has the same name as \(inputs[other]), so both would get the id \"\(s)\"; "
                    + "give ids in a media-items CSV")
            }
            defaultIDs[s] = i
        }
        return Assignment(inputItems: inputItems, referenceItems: referenceItems)
    }
}
