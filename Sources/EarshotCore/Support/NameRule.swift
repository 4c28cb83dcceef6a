/// The rule for names a client gives (owners, catalogs, cue ids, attribute names, allow-list
/// names): printable text of bounded length, compared byte for byte.
public enum NameRule {
    /// Longest name in UTF-8 bytes.
    public static let maximumBytes = 256

    /// Why `name` cannot be used as a `what` (e.g. "owner"), or nil when it can. Empty names are
    /// the caller's to allow or refuse.
    public static func problem(_ name: String, as what: String) -> String? {
        // Length first: the answer never quotes more than a name may hold.
        if name.utf8.count > maximumBytes {
            return "\(what) is \(name.utf8.count) bytes long; names are at most \(maximumBytes)"
        }
        if let bad = name.unicodeScalars.first(where: \.isControlCharacter) {
            let code = String(bad.value, radix: 16, uppercase: true)
            return "\(what) \"\(name.escapingControlCharacters)\" contains a control character (U+\(String(repeating: "0", count: max(0, 4 - code.count)) + code)): names are printable text"
        }
        return nil
    }
}
