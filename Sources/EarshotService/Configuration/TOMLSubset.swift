import FoundationEssentials

/// The part of TOML a config file needs: `[section]` headers, `key = value` lines with strings
/// (basic `"…"` with the usual escapes, or literal `'…'`), integers, floats, booleans and
/// one-line arrays of those, and `#` comments. Anything else is an error naming the line, so a
/// typo is caught at start instead of silently ignored.
public enum TOMLSubset {
    /// Not `indirect`: `[Value]` already stores its elements out of line. An indirect enum
    /// boxes every payload and keeps the case number in the spare high bits of the box
    /// pointer, so LeakSanitizer, which only recognises untagged pointers, called the boxes of
    /// earshotd's `--key=value` overrides (held by a global until exit) leaks.
    public enum Value: Equatable, Sendable, CustomStringConvertible {
        case string(String)
        case integer(Int)
        case float(Double)
        case boolean(Bool)
        case array([Value])

        public var description: String {
            switch self {
            case .string(let s): "\"\(s)\""
            case .integer(let i): String(i)
            case .float(let d): String(d)
            case .boolean(let b): String(b)
            case .array(let a): "[" + a.map(\.description).joined(separator: ", ") + "]"
            }
        }
    }

    public struct ParseError: Error, Equatable, CustomStringConvertible {
        public var line: Int
        public var message: String
        public var description: String { "line \(line): \(message)" }
    }

    /// "section.key" → value, in file order of first appearance.
    public static func parse(_ text: String) throws(ParseError) -> [(key: String, value: Value)] {
        var result: [(key: String, value: Value)] = []
        var seen = Set<String>()
        var section = ""
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let number = index + 1
            var scanner = Scanner(Array(rawLine.utf8), line: number)
            scanner.skipSpaces()
            if scanner.atEndOrComment { continue }
            if scanner.peek == UInt8(ascii: "[") {
                scanner.advance()
                scanner.skipSpaces()
                let name = try scanner.bareKey(allowDots: true)
                scanner.skipSpaces()
                try scanner.expect("]")
                scanner.skipSpaces()
                guard scanner.atEndOrComment else { throw ParseError(line: number, message: "unexpected text after [\(name)]") }
                section = name
                continue
            }
            let key = try scanner.bareKey(allowDots: false)
            scanner.skipSpaces()
            try scanner.expect("=")
            scanner.skipSpaces()
            let value = try scanner.value()
            scanner.skipSpaces()
            guard scanner.atEndOrComment else { throw ParseError(line: number, message: "unexpected text after the value of \(key)") }
            let full = section.isEmpty ? key : "\(section).\(key)"
            guard seen.insert(full).inserted else { throw ParseError(line: number, message: "\(full) is set twice") }
            result.append((full, value))
        }
        return result
    }

    /// Parses one value as written on a command line (`--rpc.listen=tcp://…`): TOML syntax when
    /// it parses, otherwise the raw text as a string.
    public static func parseValue(_ text: String) -> Value {
        var scanner = Scanner(Array(text.utf8), line: 0)
        if let v = try? scanner.value(), scanner.atEnd { return v }
        return .string(text)
    }

    private struct Scanner {
        let bytes: [UInt8]
        let line: Int
        var at = 0
        /// Arrays open around the current position. Parsing recurses per level, so the depth is
        /// bounded: a line of '[' would otherwise overflow the stack.
        var depth = 0
        static let maximumDepth = 16

        init(_ bytes: [UInt8], line: Int) {
            self.bytes = bytes
            self.line = line
        }

        var atEnd: Bool { at >= bytes.count }
        var peek: UInt8? { at < bytes.count ? bytes[at] : nil }
        var atEndOrComment: Bool { atEnd || peek == UInt8(ascii: "#") || (peek == 13 && at == bytes.count - 1) }

        mutating func advance() { at += 1 }

        mutating func skipSpaces() {
            while let c = peek, c == 32 || c == 9 { at += 1 }
        }

        func fail(_ message: String) -> ParseError { ParseError(line: line, message: message) }

        mutating func expect(_ character: Character) throws(ParseError) {
            guard let c = peek, c == character.asciiValue else { throw fail("expected '\(character)'") }
            at += 1
        }

        mutating func bareKey(allowDots: Bool) throws(ParseError) -> String {
            let start = at
            while let c = peek, c.isKeyCharacter || (allowDots && c == UInt8(ascii: ".")) { at += 1 }
            guard at > start else { throw fail("expected a key (letters, digits, '_' or '-')") }
            return String(decoding: bytes[start..<at], as: UTF8.self)
        }

        mutating func value() throws(ParseError) -> Value {
            guard let c = peek else { throw fail("missing value") }
            switch c {
            case UInt8(ascii: "\""): return .string(try basicString())
            case UInt8(ascii: "'"): return .string(try literalString())
            case UInt8(ascii: "["): return .array(try array())
            default: return try scalar()
            }
        }

        static func isControl(_ byte: UInt8) -> Bool { (byte < 0x20 && byte != 9) || byte == 0x7F }

        mutating func basicString() throws(ParseError) -> String {
            at += 1
            var out: [UInt8] = []
            while let c = peek {
                at += 1
                if c == UInt8(ascii: "\"") { return String(decoding: out, as: UTF8.self) }
                if c == UInt8(ascii: "\\") {
                    guard let e = peek else { break }
                    at += 1
                    switch e {
                    case UInt8(ascii: "n"): out.append(10)
                    case UInt8(ascii: "t"): out.append(9)
                    case UInt8(ascii: "\""): out.append(34)
                    case UInt8(ascii: "\\"): out.append(92)
                    default: throw fail("unsupported escape \\\(Character(UnicodeScalar(e)))")
                    }
                } else {
                    // As TOML says: no control character but tab inside a string (a NUL would
                    // cut a path short on its way to C).
                    if Self.isControl(c) { throw fail("control character 0x\(String(c, radix: 16)) in a string") }
                    out.append(c)
                }
            }
            throw fail("unterminated string")
        }

        mutating func literalString() throws(ParseError) -> String {
            at += 1
            let start = at
            while let c = peek, c != UInt8(ascii: "'") {
                if Self.isControl(c) { throw fail("control character 0x\(String(c, radix: 16)) in a string") }
                at += 1
            }
            guard peek != nil else { throw fail("unterminated string") }
            defer { at += 1 }
            return String(decoding: bytes[start..<at], as: UTF8.self)
        }

        mutating func array() throws(ParseError) -> [Value] {
            guard depth < Self.maximumDepth else { throw fail("arrays nested more than \(Self.maximumDepth) deep") }
            depth += 1
            defer { depth -= 1 }
            at += 1
            var items: [Value] = []
            while true {
                skipSpaces()
                if peek == UInt8(ascii: "]") {
                    at += 1
                    return items
                }
                items.append(try value())
                skipSpaces()
                if peek == UInt8(ascii: ",") {
                    at += 1
                } else if peek != UInt8(ascii: "]") {
                    throw fail("expected ',' or ']' in array (arrays must fit on one line)")
                }
            }
        }

        mutating func scalar() throws(ParseError) -> Value {
            let start = at
            while let c = peek, c != 32, c != 9, c != UInt8(ascii: ","), c != UInt8(ascii: "]"), c != UInt8(ascii: "#") { at += 1 }
            let text = String(decoding: bytes[start..<at], as: UTF8.self).replacing("_", with: "")
            if text == "true" { return .boolean(true) }
            if text == "false" { return .boolean(false) }
            if let i = Int(text) { return .integer(i) }
            if let d = Double(text), d.isFinite { return .float(d) }
            throw fail("'\(text)' is not a value (strings need quotes)")
        }
    }
}

private extension UInt8 {
    var isKeyCharacter: Bool {
        (self >= 0x30 && self <= 0x39) || (self >= 0x41 && self <= 0x5A) || (self >= 0x61 && self <= 0x7A)
            || self == UInt8(ascii: "_") || self == UInt8(ascii: "-")
    }
}
