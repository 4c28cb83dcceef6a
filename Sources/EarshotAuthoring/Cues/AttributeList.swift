import EarshotCore

/// An RFC 8216 §4.2 attribute list, `NAME=value,NAME=value`, as HLS tags carry it
/// (`#EXT-X-DATERANGE:ID="ad1",START-DATE="…",DURATION=30`): parsed strictly, written back so
/// that `parse(render(list))` gives `list` again.
///
/// A value's type is decided by its syntax, since the attributes Earshot does not know carry no
/// declaration: a quoted string; `0x…` a hexadecimal sequence; digits a decimal integer (a
/// decimal-floating-point number when it does not fit 64 bits); digits with one `.` a
/// decimal-floating-point number, with a leading `-` a signed one; `<digits>x<digits>` a
/// resolution; anything else unquoted an enumerated string. Text is kept exactly as written
/// (`1.50` stays `1.50`), so nothing changes on the way through.
public struct AttributeList: Sendable, Equatable {
    public struct Attribute: Sendable, Equatable {
        public var name: String
        public var value: AttributeValue

        public init(_ name: String, _ value: AttributeValue) {
            self.name = name
            self.value = value
        }
    }

    /// In the order written.
    public var attributes: [Attribute]

    public init(_ attributes: [Attribute] = []) {
        self.attributes = attributes
    }

    /// The value of attribute `name`, if present.
    public subscript(name: String) -> AttributeValue? {
        attributes.first { $0.name == name }?.value
    }

    /// Parses `text` (what follows the tag's `:`). The empty text is the empty list. Errors give
    /// the 1-based column (in Unicode scalars) of what is wrong.
    public static func parse(_ text: String) throws(AttributeListError) -> AttributeList {
        let s = Array(text.unicodeScalars)
        var list: [Attribute] = []
        var seen = Set<String>()
        var i = 0
        guard !s.isEmpty else { return AttributeList() }
        while true {
            let nameStart = i
            while i < s.count, s[i] != "=", s[i] != "," { i += 1 }
            let name = String(String.UnicodeScalarView(s[nameStart..<i]))
            guard i < s.count, s[i] == "=" else {
                if name.isEmpty {
                    throw AttributeListError(column: nameStart + 1, reason: "empty attribute (two commas in a row, or a comma at the end)")
                }
                throw AttributeListError(column: nameStart + 1, reason: "attribute \"\(name)\" has no \"=\" and value")
            }
            if let problem = nameProblem(name) { throw AttributeListError(column: nameStart + 1, reason: problem) }
            guard seen.insert(name).inserted else {
                throw AttributeListError(column: nameStart + 1, reason: "\(name) given twice in one tag")
            }
            i += 1  // "="
            let value = try parseValue(s, from: &i, of: name)
            list.append(Attribute(name, value))
            if i == s.count { break }
            i += 1  // ","
            if i == s.count {
                throw AttributeListError(column: i, reason: "empty attribute (two commas in a row, or a comma at the end)")
            }
        }
        return AttributeList(list)
    }

    /// Parses one value on its own (a CSV cell holding an attribute's value): `"text"`, `0x1F`,
    /// `1.5`, `ENUM`. Columns count from the value's first character.
    public static func parseValue(_ text: String, of name: String) throws(AttributeListError) -> AttributeValue {
        let s = Array(text.unicodeScalars)
        var i = 0
        let value = try parseValue(s, from: &i, of: name)
        guard i == s.count else {
            throw AttributeListError(column: i + 1, reason: "\(name): a \",\" ends the value; quote text that holds commas")
        }
        return value
    }

    /// The text of the list, `NAME=value,…`. Throws for what would not read back the same: a
    /// name that is not an attribute name or is given twice, a value whose text does not have
    /// the syntax of its kind.
    public func render() throws(AttributeListError) -> String {
        var seen = Set<String>()
        var out = ""
        for attribute in attributes {
            if let problem = Self.nameProblem(attribute.name) { throw AttributeListError(column: nil, reason: problem) }
            guard seen.insert(attribute.name).inserted else {
                throw AttributeListError(column: nil, reason: "\(attribute.name) given twice in one tag")
            }
            if !out.isEmpty { out += "," }
            out += attribute.name + "=" + (try attribute.value.rendered(as: attribute.name))
        }
        return out
    }

    /// Why `name` is not an attribute name (`[A-Z0-9-]+`), or nil if it is one.
    public static func nameProblem(_ name: String) -> String? {
        if name.isEmpty { return "empty attribute name before \"=\"" }
        if let space = name.unicodeScalars.first(where: { $0.properties.isWhitespace }) {
            return "attribute name \"\(printable(name))\" has \(describe(space)); attribute lists have no spaces around \",\" and \"=\""
        }
        if name.unicodeScalars.contains(where: { ("a"..."z").contains($0) }) {
            return "attribute name \"\(printable(name))\" has lowercase letters; names are upper case (A–Z, 0–9 and -)"
        }
        if let bad = name.unicodeScalars.first(where: { !isNameScalar($0) }) {
            return "attribute name \"\(printable(name))\" has \(describe(bad)); names use only A–Z, 0–9 and -"
        }
        return nil
    }

    static func isNameScalar(_ c: Unicode.Scalar) -> Bool { ("A"..."Z").contains(c) || ("0"..."9").contains(c) || c == "-" }

    /// Reads a value starting at `i` (just after "="), leaving `i` on the "," after it or at the end.
    private static func parseValue(_ s: [Unicode.Scalar], from i: inout Int, of name: String) throws(AttributeListError) -> AttributeValue {
        let start = i
        if i < s.count, s[i] == "\"" {
            i += 1
            let textStart = i
            while i < s.count, s[i] != "\"" {
                if let problem = AttributeValue.quotedProblem(s[i]) {
                    throw AttributeListError(column: i + 1, reason: "the quoted string of \(name) \(problem)")
                }
                i += 1
            }
            guard i < s.count else { throw AttributeListError(column: start + 1, reason: "unterminated quoted string in \(name)") }
            let text = String(String.UnicodeScalarView(s[textStart..<i]))
            i += 1  // closing quote
            if i < s.count, s[i] != "," {
                throw AttributeListError(column: i + 1, reason: "\(name): text after the closing quote; a quoted string is the whole value")
            }
            return AttributeValue(.quotedString, text)
        }
        while i < s.count, s[i] != "," {
            let c = s[i]
            if c == "\"" {
                throw AttributeListError(column: i + 1, reason: "\(name): a quote inside an unquoted value; quote the whole value")
            }
            if c.properties.isWhitespace {
                throw AttributeListError(column: i + 1, reason: "\(name): \(describe(c)) in an unquoted value; quote text that holds spaces")
            }
            if c.isControlCharacter {
                throw AttributeListError(column: i + 1, reason: "\(name): \(describe(c)) in the value")
            }
            i += 1
        }
        guard i > start else { throw AttributeListError(column: start + 1, reason: "\(name) has no value after \"=\"") }
        let text = String(String.UnicodeScalarView(s[start..<i]))
        return AttributeValue(AttributeValue.kind(ofUnquoted: text), text)
    }

    static func describe(_ c: Unicode.Scalar) -> String {
        if c == " " { return "a space" }
        if c == "\t" { return "a tab" }
        if c == "\r" || c == "\n" { return "a line break" }
        if c.isControlCharacter || c.properties.isWhitespace { return "the character U+\(hex4(c.value))" }
        return "the character \"\(c)\""
    }

    static func hex4(_ v: UInt32) -> String {
        let digits = String(v, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    /// `text` for an error message: control characters shown as U+XXXX, at most 40 characters.
    static func printable(_ text: String) -> String {
        var out = ""
        for c in text.unicodeScalars.prefix(40) {
            out += c.isControlCharacter ? "U+" + hex4(c.value) : String(c)
        }
        return text.unicodeScalars.count > 40 ? out + "…" : out
    }
}

/// One attribute value: its RFC 8216 type and its text as written (a quoted string without
/// its quotes).
public struct AttributeValue: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case decimalInteger = "decimal-integer"
        case hexadecimalSequence = "hexadecimal-sequence"
        case decimalFloatingPoint = "decimal-floating-point"
        case signedDecimalFloatingPoint = "signed-decimal-floating-point"
        case quotedString = "quoted-string"
        case enumeratedString = "enumerated-string"
        case decimalResolution = "decimal-resolution"
    }

    public var kind: Kind
    public var text: String

    public init(_ kind: Kind, _ text: String) {
        self.kind = kind
        self.text = text
    }

    public static func quoted(_ text: String) -> AttributeValue { AttributeValue(.quotedString, text) }
    public static func enumerated(_ text: String) -> AttributeValue { AttributeValue(.enumeratedString, text) }

    /// True for the three number kinds (integers, floats, signed floats).
    public var isNumber: Bool {
        kind == .decimalInteger || kind == .decimalFloatingPoint || kind == .signedDecimalFloatingPoint
    }

    /// The value as written in an attribute list; throws if its text would read back as
    /// something else.
    public func rendered(as name: String) throws(AttributeListError) -> String {
        if kind == .quotedString {
            if text.unicodeScalars.contains("\"") {
                throw AttributeListError(column: nil, reason: "the quoted string of \(name) contains a quote (\"), which it cannot hold")
            }
            if let bad = text.unicodeScalars.first(where: { Self.quotedProblem($0) != nil }),
                let problem = Self.quotedProblem(bad)
            {
                throw AttributeListError(column: nil, reason: "the quoted string of \(name) \(problem)")
            }
            return "\"" + text + "\""
        }
        guard !text.isEmpty else { throw AttributeListError(column: nil, reason: "\(name) has an empty \(kind.rawValue)") }
        if let bad = text.unicodeScalars.first(where: { $0 == "\"" || $0 == "," || $0.properties.isWhitespace || $0.isControlCharacter }) {
            throw AttributeListError(column: nil, reason: "\(name): \(AttributeList.describe(bad)) in an unquoted value")
        }
        let readBack = Self.kind(ofUnquoted: text)
        guard readBack == kind else {
            throw AttributeListError(
                column: nil, reason: "\(name): \"\(AttributeList.printable(text))\" does not read as \(kind.rawValue) (it reads as \(readBack.rawValue))")
        }
        return text
    }

    /// The kind an unquoted value's text has (see `AttributeList`).
    public static func kind(ofUnquoted text: String) -> Kind {
        let u = Array(text.utf8)
        func isDigit(_ b: UInt8) -> Bool { (0x30...0x39).contains(b) }
        func isHex(_ b: UInt8) -> Bool { isDigit(b) || (0x41...0x46).contains(b) || (0x61...0x66).contains(b) }
        if u.count > 2, u[0] == 0x30, u[1] == 0x78 || u[1] == 0x58, u[2...].allSatisfy(isHex) { return .hexadecimalSequence }
        if !u.isEmpty, u.allSatisfy(isDigit) {
            // RFC 8216: a decimal-integer is 0…2^64−1; longer digit strings are still numbers.
            return UInt64(text) != nil ? .decimalInteger : .decimalFloatingPoint
        }
        if isUnsignedFloat(u[...]) { return .decimalFloatingPoint }
        if u.first == 0x2D, isUnsignedFloat(u.dropFirst()) || (u.count > 1 && u.dropFirst().allSatisfy(isDigit)) {
            return .signedDecimalFloatingPoint
        }
        if let x = u.firstIndex(of: 0x78), x > 0, x < u.count - 1, u[..<x].allSatisfy(isDigit), u[(x + 1)...].allSatisfy(isDigit) {
            return .decimalResolution
        }
        return .enumeratedString
    }

    /// Digits with exactly one "." and at least one digit.
    private static func isUnsignedFloat(_ u: ArraySlice<UInt8>) -> Bool {
        var digits = 0, points = 0
        for b in u {
            if (0x30...0x39).contains(b) { digits += 1 } else if b == 0x2E { points += 1 } else { return false }
        }
        return digits > 0 && points == 1
    }

    /// Why `c` cannot be in a quoted string (RFC 8216: no CR, LF or `"`; a playlist holds no
    /// control characters at all), or nil.
    static func quotedProblem(_ c: Unicode.Scalar) -> String? {
        if c == "\r" || c == "\n" { return "contains a line break" }
        if c.isControlCharacter { return "contains the control character U+\(AttributeList.hex4(c.value))" }
        return nil
    }
}

/// What is wrong with an attribute list, and where: `column` counts Unicode scalars from 1 in
/// the parsed text (nil when rendering).
public struct AttributeListError: Error, Equatable, Sendable, CustomStringConvertible {
    public var column: Int?
    public var reason: String

    public init(column: Int?, reason: String) {
        self.column = column
        self.reason = reason
    }

    public var description: String { column.map { "column \($0): \(reason)" } ?? reason }
}
