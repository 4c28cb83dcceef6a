import EarshotCore
import Foundation

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
