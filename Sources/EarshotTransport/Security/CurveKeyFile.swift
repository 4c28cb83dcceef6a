import EarshotSystem
import FoundationEssentials

#if canImport(Glibc)
    import Glibc
#endif

/// Key files: a secret key file holds the Z85 secret key on its one non-comment line (the public
/// half is derived from it); a public key file holds the Z85 public key the same way. Comments
/// are lines starting with '#' that are not a key ('#' is a Z85 character too). The same format
/// serves the daemon's `server.key` and `earshot keygen`.
public enum CurveKeyFile {
    public struct Problem: Error, CustomStringConvertible {
        public var message: String
        public var description: String { message }
        public init(message: String) { self.message = message }
    }

    /// The key pair in a secret key file.
    public static func readKeyPair(_ path: String) throws(Problem) -> CurveKeyPair {
        let key = try readKey(path)
        do { return try CurveKeyPair(secretKey: key) } catch {
            throw Problem(message: "\(path): not a CURVE secret key (\(error.message))")
        }
    }

    /// The one key in a key file (public or secret), checked to be 40 characters of Z85. A
    /// client's `.pub` holds its allow-list line, "<key> <name> <role>": its first field is the key.
    public static func readKey(_ path: String) throws(Problem) -> String {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw Problem(message: "\(path): cannot read the key file")
        }
        let lines = text.split(whereSeparator: \.isNewline)
            .map { line in line.split(whereSeparator: \.isWhitespace).first.map(String.init) ?? "" }
            .filter { !$0.isEmpty && !($0.hasPrefix("#") && !CurveKeyPair.isValidKey($0)) }
        guard lines.count == 1, CurveKeyPair.isValidKey(lines[0]) else {
            throw Problem(message: "\(path): a key file holds one 40-character Z85 key (and '#' comments)")
        }
        return lines[0]
    }

    /// A key given as Z85 text or as the path of a key file.
    public static func key(fromTextOrFile value: String) throws(Problem) -> String {
        if CurveKeyPair.isValidKey(value) { return value }
        if FileManager.default.fileExists(atPath: value) { return try readKey(value) }
        throw Problem(message: "\"\(value)\" is neither a 40-character Z85 key nor a key file")
    }

    /// Writes the secret key file (mode 0600) atomically: temp file, fsync, rename, so a crash
    /// leaves either no key or the whole key, never half of one.
    public static func writeSecret(_ pair: CurveKeyPair, to path: String, comment: String) throws(Problem) {
        try write("# \(comment)\n# public key: \(pair.publicKey)\n\(pair.secretKey)\n", to: path, mode: 0o600)
    }

    /// Writes a public key file (mode 0644), atomically too.
    public static func writePublic(_ publicKey: String, to path: String, comment: String) throws(Problem) {
        try write("# \(comment)\n\(publicKey)\n", to: path, mode: 0o644)
    }

    /// Writes a client's `.pub`: its allow-list line after a comment (mode 0644, atomically).
    public static func writeAllowListLine(_ line: String, to path: String, comment: String) throws(Problem) {
        try write("# \(comment)\n\(line)\n", to: path, mode: 0o644)
    }

    static func write(_ text: String, to path: String, mode: mode_t) throws(Problem) {
        do { try AtomicFile.write(Array(text.utf8), to: path, mode: mode, forceMode: true) } catch {
            throw Problem(message: error.message)
        }
    }
}
