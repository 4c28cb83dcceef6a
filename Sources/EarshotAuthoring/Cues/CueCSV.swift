import EarshotCore

/// Cues as CSV, for editing in a spreadsheet: one row per cue, the same fields as the
/// playlist's `EXT-X-DATERANGE` attributes.
///
/// RFC 4180 as the media-items CSV (`CSVRecords`): commas, `"`-quoted fields (`""` for a quote;
/// quoted fields may hold commas), LF or CRLF, UTF-8 with an optional BOM; blank lines are
/// skipped. The first row is the header; each column appears at most once, in any order:
///
/// | column | attribute | cell |
/// |---|---|---|
/// | `id` (required) | `ID` | text |
/// | `class` | `CLASS` | text; empty for none |
/// | `start` (required) | `START-DATE` − origin | seconds on the reference, `12.5` |
/// | `duration`, `planned-duration`, `playout-limit` | `DURATION`, `PLANNED-DURATION`, `X-PLAYOUT-LIMIT` | seconds, 0 or more |
/// | `resume-offset` | `X-RESUME-OFFSET` | seconds, may be negative |
/// | `end-on-next` | `END-ON-NEXT` | `YES`, or empty |
/// | `asset-uri`, `asset-list`, `skip-control-label-id` | `X-ASSET-URI`, `X-ASSET-LIST`, `X-SKIP-CONTROL-LABEL-ID` | text |
/// | `restrict`, `cue`, `snap` | `X-RESTRICT`, `CUE`, `X-SNAP` | comma-separated values: `"SKIP,JUMP"`, `"PRE,ONCE"`, `"OUT,IN"` |
/// | `content-may-vary` | `X-CONTENT-MAY-VARY` | `YES` or `NO` |
/// | `timeline-occupies`, `timeline-style` | `X-TIMELINE-OCCUPIES`, `X-TIMELINE-STYLE` | `POINT`/`RANGE`, `HIGHLIGHT`/`PRIMARY` |
/// | `skip-control-offset`, `skip-control-duration` | `X-SKIP-CONTROL-OFFSET`, `X-SKIP-CONTROL-DURATION` | seconds |
/// | any other attribute name (`X-COM-EXAMPLE`, `SCTE35-OUT`: upper case, `A–Z 0–9 -`) | itself | the value as an attribute list writes it, so its kind is kept: `"text"` (quoted string), `0x1F` (hexadecimal), `1.5` (decimal), `ENUM` (enumerated) |
///
/// Column names are lower case as above; a column may also be named by its attribute
/// (`X-ASSET-URI` for `asset-uri`), and any other upper-case name is an extra attribute. An empty cell means "not set"; text cells are taken as
/// written, other cells without surrounding spaces. Numbers are positional decimals (no `1e5`,
/// `inf` or `nan`). A `START-DATE`/`END-DATE` column, or any other name, is an error naming it;
/// so is an id given twice. Errors are `EarshotError.catalogInvalid("line N, column c: …")`,
/// and any error means no cues.
///
/// `render` writes every column above in that order, then one column per extra attribute in use
/// (sorted by name), one row per cue in timeline order; numbers have the shortest digits that
/// read back as the same `Double`, so `parse(render(cues))` gives back `cues`.
public enum CueCSV {
    /// What a header cell names.
    enum Column: Equatable {
        case start
        case field(CueField)
        case extra(String)

        var name: String {
            switch self {
            case .start: "start"
            case .field(let field): field.columnName
            case .extra(let name): name
            }
        }
    }

    /// The standard columns, in the order `render` writes them.
    static let standardColumns: [Column] = {
        var columns = CueField.allCases.map(Column.field)
        columns.insert(.start, at: 2)  // after id and class
        return columns
    }()

    /// Header names of the standard columns, in order.
    public static var columnNames: [String] { standardColumns.map(\.name) }

    /// Reads a CSV file's bytes (see `parse(text:referenceDuration:)`).
    public static func parse(bytes: [UInt8], referenceDuration: Double) throws(EarshotError) -> [Cue] {
        guard let text = String(validating: bytes, as: UTF8.self) else { throw .catalogInvalid("the file is not UTF-8 text") }
        return try parse(text: text, referenceDuration: referenceDuration)
    }

    /// The cues of CSV `text` on a reference of `referenceDuration` seconds, in timeline order.
    public static func parse(text: String, referenceDuration: Double) throws(EarshotError) -> [Cue] {
        let records = try CSVRecords.split(text).filter { !$0.isBlank }
        guard let header = records.first else { throw .catalogInvalid("line 1: the file is empty; a header row is required") }
        let columns = try parseHeader(header)
        var cues: [Cue] = []
        var lineOfID: [String: Int] = [:]
        for record in records.dropFirst() {
            guard record.fields.count == columns.count else {
                throw .catalogInvalid("line \(record.line): \(record.fields.count) fields, but the header has \(columns.count)")
            }
            var cue = Cue(id: "", start: 0)
            for (column, cell) in zip(columns, record.fields) {
                do { try read(cell, of: column, into: &cue) } catch {
                    throw .catalogInvalid("line \(record.line), column \(column.name): \(error.message)")
                }
            }
            if let first = lineOfID[cue.id] {
                throw .catalogInvalid("line \(record.line): cue \(AttributeList.printable(cue.id)): the id is given again (first on line \(first))")
            }
            lineOfID[cue.id] = record.line
            do { _ = try CueSchedule([cue], referenceDuration: referenceDuration) } catch {
                throw .catalogInvalid("line \(record.line): \(error.message)")
            }
            cues.append(cue)
        }
        return try CueSchedule(cues, referenceDuration: referenceDuration).cues
    }

    /// The CSV for `cues` on a reference of `referenceDuration` seconds. Throws if they are not
    /// a valid schedule for it, or a cue holds what `parse` would read back differently.
    public static func render(_ cues: [Cue], referenceDuration: Double) throws(EarshotError) -> String {
        let schedule = try CueSchedule(cues, referenceDuration: referenceDuration)
        let extras = Set(schedule.cues.flatMap(\.attributes.keys)).sorted()
        let columns = standardColumns + extras.map(Column.extra)
        var out = columns.map { CSVRecords.quoted($0.name) }.joined(separator: ",") + "\n"
        for cue in schedule.cues {
            func fail(_ why: String) -> EarshotError { .catalogInvalid("cue \(AttributeList.printable(cue.id)): \(why)") }
            var cells: [String] = []
            for column in columns {
                switch column {
                case .start: cells.append(DecimalText.plain(cue.start))
                case .field(let field):
                    guard let value = field.value(of: cue) else {
                        cells.append("")
                        continue
                    }
                    // Held to the rules `parse` applies (an empty text would read back as unset).
                    var probe = Cue(id: "", start: 0)
                    do { try field.read(value, into: &probe) } catch { throw fail("column \(field.columnName): \(error.message)") }
                    cells.append(value.text)
                case .extra(let name):
                    guard let attribute = cue.attributes[name] else {
                        cells.append("")
                        continue
                    }
                    do { cells.append(try CueField.written(attribute, named: name)) } catch { throw fail(error.message) }
                }
            }
            // What the CSV would read back differently (an empty asset URI, a line break in a
            // text) is refused here rather than exported as something else.
            var back = Cue(id: "", start: 0)
            for (column, cell) in zip(columns, cells) {
                do { try read(cell, of: column, into: &back) } catch { throw fail("column \(column.name): \(error.message)") }
            }
            guard back == cue else { throw fail("it cannot be written as a CSV row that reads back the same") }
            out += cells.map(CSVRecords.quoted).joined(separator: ",") + "\n"
        }
        return out
    }

    private static func parseHeader(_ record: CSVRecords.Record) throws(EarshotError) -> [Column] {
        var byName: [String: Column] = [:]
        for column in standardColumns {
            byName[column.name] = column
            if case .field(let field) = column { byName[field.attributeName] = column }
        }
        var columns: [Column] = []
        for (k, raw) in record.fields.enumerated() {
            let name = raw.trimmingCharacters(in: .whitespaces)
            func fail(_ why: String) -> EarshotError { .catalogInvalid("line \(record.line), column \(k + 1): \(why)") }
            let column: Column
            if let known = byName[name] {
                column = known
            } else if name.isEmpty {
                throw fail("the header has an empty column name")
            } else if name == "START-DATE" || name == "END-DATE" {
                throw fail("\(name) is not a column: give start (and duration) in seconds on the reference")
            } else if AttributeList.nameProblem(name) == nil {
                column = .extra(name)
            } else {
                throw fail("unknown column \"\(AttributeList.printable(name))\"; the columns are \(columnNames.joined(separator: ", ")), "
                    + "and extra attributes named as the attribute in upper case (X-COM-EXAMPLE)")
            }
            guard !columns.contains(column) else { throw fail("the column \(column.name) appears twice") }
            columns.append(column)
        }
        for required in [Column.field(.id), .start] where !columns.contains(required) {
            throw .catalogInvalid("line \(record.line): the header has no \(required.name) column")
        }
        return columns
    }

    /// Reads one cell into `cue`; an empty cell leaves it unset.
    private static func read(_ cell: String, of column: Column, into cue: inout Cue) throws(CueField.Problem) {
        func fail(_ why: String) -> CueField.Problem { CueField.Problem(message: why) }
        switch column {
        case .start:
            let text = cell.trimmingCharacters(in: .whitespaces)
            guard !text.isEmpty else { throw fail("a cue needs a start (seconds on the reference)") }
            let value = AttributeValue(AttributeValue.kind(ofUnquoted: text), text)
            guard value.isNumber, let seconds = Double(text) else {
                throw fail("\"\(AttributeList.printable(text))\" is not a number of seconds (digits with an optional decimal point, like 12.5)")
            }
            guard seconds.isFinite else { throw fail("\(AttributeList.printable(text)) is too large") }
            cue.start = seconds + 0
        case .field(let field):
            let value: AttributeValue
            switch field {
            case .id, .cueClass, .assetURI, .assetList, .skipControlLabelID:
                if cell.isEmpty, field != .id { return }
                value = .quoted(cell)
            case .restrictions, .flags, .snap, .contentMayVary, .timelineOccupies, .timelineStyle:
                let text = cell.trimmingCharacters(in: .whitespaces)
                if text.isEmpty { return }
                value = .quoted(text)
            default:
                let text = cell.trimmingCharacters(in: .whitespaces)
                if text.isEmpty { return }
                value = AttributeValue(AttributeValue.kind(ofUnquoted: text), text)
            }
            try field.read(value, into: &cue)
        case .extra(let name):
            let text = cell.trimmingCharacters(in: .whitespaces)
            if text.isEmpty { return }
            do { cue.attributes[name] = CueField.kept(try AttributeList.parseValue(text, of: name)) } catch { throw fail(error.reason) }
        }
    }
}
