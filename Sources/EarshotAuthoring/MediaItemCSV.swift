import EarshotCore

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
