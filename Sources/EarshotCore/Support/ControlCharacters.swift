/// Control characters (C0, DEL, C1) in text that reaches a log, a terminal or C: names carry none,
/// and text shown to people carries them escaped, so a hostile name can neither cut a C string at
/// a NUL nor forge or hide a log line.
extension Unicode.Scalar {
    /// U+0000–U+001F, U+007F–U+009F.
    public var isControlCharacter: Bool { value < 0x20 || (0x7F...0x9F).contains(value) }
}

extension StringProtocol {
    /// The text with each control character written as `\n`, `\t`, `\r` or `\u{…}` and each
    /// backslash doubled, so an escape in the output always stands for what was sent.
    public var escapingControlCharacters: String {
        // Every control character's first UTF-8 byte is below 0x20, 0x7F or 0xC2 (C1): a byte
        // scan finds the common case, nothing to escape, without decoding.
        guard utf8.contains(where: { $0 < 0x20 || $0 == 0x7F || $0 == 0xC2 || $0 == 0x5C }) else { return String(self) }
        var out = ""
        out.reserveCapacity(utf8.count + 8)
        for scalar in unicodeScalars {
            switch scalar {
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            case "\\": out += "\\\\"
            case _ where scalar.isControlCharacter:
                out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
