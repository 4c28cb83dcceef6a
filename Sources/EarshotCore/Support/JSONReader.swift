/// Reads JSON text (RFC 8259) from UTF-8 bytes, one value at a time, for formats whose layout
/// the caller knows.
///
/// Foundation's `JSONDecoder` spends about 10 µs on even the smallest `Codable` value; a catalog
/// decodes one media-item list per reference when it opens, so a 100-hour catalog of 600
/// references spent most of its open there (benchmarks/RESULTS.md, Scale). This reader is strict
/// (no comments, trailing commas, NaN, leading zeros or invalid UTF-8), bounds-checked on
/// untrusted bytes, and limits nesting so that crafted input cannot exhaust the stack.
struct JSONReader {
    /// Why the bytes are not the JSON the caller expects: the byte offset, what was wrong, and
    /// the caller's name for the field being read, if it gave one.
    struct Failure: Error, Equatable, CustomStringConvertible {
        var offset: Int
        var reason: String
        var field: String?
        var description: String { (field.map { "\($0): " } ?? "") + "\(reason) at byte \(offset)" }

        /// The same failure, naming `field` unless a deeper field is named already.
        func within(_ field: @autoclosure () -> String) -> Failure {
            var named = self
            if named.field == nil { named.field = field() }
            return named
        }
    }

    /// Deepest nesting of arrays and objects the reader accepts.
    static let maximumDepth = 512

    private let bytes: UnsafeRawBufferPointer
    private(set) var offset = 0
    private var depth = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    func failure(_ reason: String) -> Failure { Failure(offset: offset, reason: reason) }

    // MARK: Structure

    /// Reads an object, calling `body` with each key while the reader stands at its value; `body`
    /// must read or skip that value.
    mutating func readObject(_ body: (inout JSONReader, String) throws(Failure) -> Void) throws(Failure) {
        try enter(UInt8(ascii: "{"), "an object")
        if try consume(UInt8(ascii: "}")) { return leave() }
        repeat {
            guard try nextByte() == UInt8(ascii: "\"") else { throw failure("expected a key") }
            let key = try readString()
            guard try consume(UInt8(ascii: ":")) else { throw failure("expected ':' after a key") }
            try body(&self, key)
        } while try separator(closing: UInt8(ascii: "}"))
        leave()
    }

    /// Reads an array, calling `body` with each element's index while the reader stands at it;
    /// `body` must read or skip the element.
    mutating func readArray(_ body: (inout JSONReader, Int) throws(Failure) -> Void) throws(Failure) {
        try enter(UInt8(ascii: "["), "an array")
        if try consume(UInt8(ascii: "]")) { return leave() }
        var index = 0
        repeat {
            try body(&self, index)
            index += 1
        } while try separator(closing: UInt8(ascii: "]"))
        leave()
    }

    /// Checks that only whitespace follows the value read.
    mutating func finish() throws(Failure) {
        skipWhitespace()
        guard offset == bytes.count else { throw failure("unexpected text after the value") }
    }

    // MARK: Scalars

    /// Consumes `null` if it comes next: an optional field's absent value.
    mutating func readNull() throws(Failure) -> Bool {
        guard try nextByte() == UInt8(ascii: "n") else { return false }
        try literal("null")
        return true
    }

    mutating func readBool() throws(Failure) -> Bool {
        switch try nextByte() {
        case UInt8(ascii: "t"): try literal("true"); return true
        case UInt8(ascii: "f"): try literal("false"); return false
        default: throw failure("expected true or false")
        }
    }

    mutating func readString() throws(Failure) -> String {
        guard try nextByte() == UInt8(ascii: "\"") else { throw failure("expected a string") }
        offset += 1
        let start = offset
        // Fast path: no escapes, the common case; the bytes are the string.
        while offset < bytes.count {
            let b = bytes[offset]
            if b == UInt8(ascii: "\"") {
                let text = try utf8(start..<offset)
                offset += 1
                return text
            }
            if b == UInt8(ascii: "\\") { break }
            guard b >= 0x20 else { throw failure("control character in a string") }
            offset += 1
        }
        var unescaped = Array(bytes[start..<offset])
        while offset < bytes.count {
            let b = bytes[offset]
            offset += 1
            switch b {
            case UInt8(ascii: "\""):
                guard let text = String(validating: unescaped, as: UTF8.self) else { throw failure("invalid UTF-8 in a string") }
                return text
            case UInt8(ascii: "\\"):
                try unescape(into: &unescaped)
            case ..<0x20:
                offset -= 1
                throw failure("control character in a string")
            default:
                unescaped.append(b)
            }
        }
        throw failure("unterminated string")
    }

    mutating func readNumber() throws(Failure) -> Double {
        skipWhitespace()
        let start = offset
        func digits(_ reader: inout JSONReader) -> Int {
            let from = reader.offset
            while reader.offset < reader.bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(reader.bytes[reader.offset]) {
                reader.offset += 1
            }
            return reader.offset - from
        }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "-") { offset += 1 }
        let integerStart = offset
        let integerDigits = digits(&self)
        guard integerDigits > 0 else { offset = start; throw failure("expected a number") }
        guard integerDigits == 1 || bytes[integerStart] != UInt8(ascii: "0") else { throw failure("leading zero in a number") }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: ".") {
            offset += 1
            guard digits(&self) > 0 else { throw failure("expected digits after '.'") }
        }
        if offset < bytes.count, bytes[offset] | 0x20 == UInt8(ascii: "e") {
            offset += 1
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "+") || bytes[offset] == UInt8(ascii: "-") { offset += 1 }
            guard digits(&self) > 0 else { throw failure("expected digits in an exponent") }
        }
        // The grammar is checked above, so the standard library's parser sees only valid text.
        guard let value = Double(String(decoding: bytes[start..<offset], as: UTF8.self)), value.isFinite else {
            throw failure("number out of range")
        }
        return value
    }

    // MARK: Any value

    /// Reads any JSON value (custom properties).
    mutating func readValue() throws(Failure) -> JSONValue {
        switch try nextByte() {
        case UInt8(ascii: "{"):
            var object: [String: JSONValue] = [:]
            try readObject { (reader, key) throws(Failure) in object[key] = try reader.readValue() }
            return .object(object)
        case UInt8(ascii: "["):
            var array: [JSONValue] = []
            try readArray { (reader, _) throws(Failure) in array.append(try reader.readValue()) }
            return .array(array)
        case UInt8(ascii: "\""): return .string(try readString())
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return .bool(try readBool())
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try readNumber())
        default: throw failure("expected a value")
        }
    }

    /// Reads and drops a value (a field this version does not know).
    mutating func skipValue() throws(Failure) { _ = try readValue() }

    // MARK: Bytes

    /// The next byte after whitespace, not consumed; a failure at the end of the text.
    mutating func nextByte() throws(Failure) -> UInt8 {
        skipWhitespace()
        guard offset < bytes.count else { throw failure("unexpected end of the text") }
        return bytes[offset]
    }

    private mutating func skipWhitespace() {
        while offset < bytes.count {
            switch bytes[offset] {
            case 0x20, 0x0A, 0x0D, 0x09: offset += 1
            default: return
            }
        }
    }

    private mutating func consume(_ byte: UInt8) throws(Failure) -> Bool {
        guard try nextByte() == byte else { return false }
        offset += 1
        return true
    }

    private mutating func enter(_ opening: UInt8, _ what: String) throws(Failure) {
        guard try nextByte() == opening else { throw failure("expected \(what)") }
        guard depth < Self.maximumDepth else { throw failure("nested deeper than \(Self.maximumDepth)") }
        depth += 1
        offset += 1
    }

    private mutating func leave() { depth -= 1 }

    /// After a member: true at ',' (another follows), false at the closing bracket.
    private mutating func separator(closing: UInt8) throws(Failure) -> Bool {
        if try consume(UInt8(ascii: ",")) { return true }
        if try consume(closing) { return false }
        throw failure("expected ',' or '\(Character(UnicodeScalar(closing)))'")
    }

    private mutating func literal(_ word: StaticString) throws(Failure) {
        let count = word.utf8CodeUnitCount
        guard bytes.count - offset >= count, (0..<count).allSatisfy({ bytes[offset + $0] == word.utf8Start[$0] }) else {
            throw failure("invalid literal")
        }
        offset += count
    }

    private func utf8(_ range: Range<Int>) throws(Failure) -> String {
        guard let text = String(validating: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self) else {
            throw Failure(offset: range.lowerBound, reason: "invalid UTF-8 in a string")
        }
        return text
    }

    /// Decodes the escape after a backslash (already consumed) into `out` as UTF-8.
    private mutating func unescape(into out: inout [UInt8]) throws(Failure) {
        guard offset < bytes.count else { throw failure("unterminated string") }
        let e = bytes[offset]
        offset += 1
        switch e {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try hex4()
            if (0xD800..<0xDC00).contains(scalar) {
                // A high surrogate must be followed by an escaped low one.
                guard bytes.count - offset >= 2, bytes[offset] == UInt8(ascii: "\\"), bytes[offset + 1] == UInt8(ascii: "u") else {
                    throw failure("unpaired surrogate in a string")
                }
                offset += 2
                let low = try hex4()
                guard (0xDC00..<0xE000).contains(low) else { throw failure("unpaired surrogate in a string") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw failure("unpaired surrogate in a string") }
            out.append(contentsOf: Character(unicode).utf8)
        default:
            offset -= 1
            throw failure("invalid escape in a string")
        }
    }

    private mutating func hex4() throws(Failure) -> UInt32 {
        guard bytes.count - offset >= 4 else { throw failure("truncated \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let b = bytes[offset]
            let digit: UInt8
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = b - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = b - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = b - UInt8(ascii: "A") + 10
            default: throw failure("invalid \\u escape")
            }
            value = value << 4 | UInt32(digit)
            offset += 1
        }
        return value
    }
}
