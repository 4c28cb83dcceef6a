import EarshotSystem

/// Catalog author keys on disk, in the layout of the CURVE key files: a secret key file holds
/// the Z85 Ed25519 seed on its one non-comment line (mode 0600), with the public key in a
/// comment; a trusted-authors file lists Z85 public keys, one per line, each optionally followed
/// by a name ("<key> alice"); '#' starts a comment line.
public enum AuthorKeyFile {
    public struct Problem: Error, CustomStringConvertible {
        public var message: String
        public var description: String { message }
        init(_ message: String) { self.message = message }
    }

    /// A trusted author: a public key and the name the file gives it.
    public struct Author: Sendable, Equatable {
        public var publicKey: [UInt8]
        public var name: String
        public init(publicKey: [UInt8], name: String) {
            self.publicKey = publicKey
            self.name = name
        }
    }

    /// The signing key in a secret key file.
    public static func readSigningKey(_ path: String) throws(Problem) -> Ed25519.SigningKey {
        let lines = try keyLines(path)
        guard lines.count == 1, let seed = Z85.decode(String(lines[0].split(separator: " ")[0])),
              let key = Ed25519.SigningKey(seed: seed)
        else { throw Problem("\(path): an author key file holds one 40-character Z85 key (and '#' comments); make one with `earshot keygen --author`") }
        return key
    }

    /// Writes a secret key file atomically (temp file, fsync, rename), mode 0600.
    public static func writeSigningKey(_ key: Ed25519.SigningKey, to path: String, comment: String) throws(Problem) {
        let text = "# \(comment)\n# public key: \(Z85.encode(key.publicKey))\n\(Z85.encode(key.seed))\n"
        do { try AtomicFile.write(Array(text.utf8), to: path, mode: 0o600, forceMode: true) } catch {
            throw Problem(error.message)
        }
    }

    /// Writes a public key file ("<key> <name>"), which can be appended to a trusted-authors file.
    public static func writePublicKey(_ key: Ed25519.SigningKey, name: String, to path: String, comment: String) throws(Problem) {
        let text = "# \(comment)\n\(Z85.encode(key.publicKey)) \(name)\n"
        do { try AtomicFile.write(Array(text.utf8), to: path, mode: 0o644, forceMode: true) } catch {
            throw Problem(error.message)
        }
    }

    /// The authors a trusted-authors file lists; a bad line is an error naming its number.
    public static func readTrustedAuthors(_ path: String) throws(Problem) -> [Author] {
        let text: String
        do { text = String(decoding: try AtomicFile.read(path), as: UTF8.self) } catch {
            throw Problem("trusted authors file: \(error.message)")
        }
        return try parseTrustedAuthors(text, source: path)
    }

    public static func parseTrustedAuthors(_ text: String, source: String) throws(Problem) -> [Author] {
        var authors: [Author] = []
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingWhitespace
            if line.isEmpty || line.hasPrefix("#") { continue }
            let fields = line.split(separator: " ", maxSplits: 1)
            guard let key = Z85.decode(String(fields[0])), key.count == Ed25519.publicKeyBytes else {
                throw Problem("\(source):\(number + 1): expected a 40-character Z85 public key, then an optional name")
            }
            let name = fields.count > 1 ? String(fields[1]).trimmingWhitespace : "author \(number + 1)"
            authors.append(Author(publicKey: key, name: name))
        }
        return authors
    }

    private static func keyLines(_ path: String) throws(Problem) -> [Substring] {
        let bytes: [UInt8]
        do { bytes = try AtomicFile.read(path) } catch { throw Problem(error.message) }
        // '#' is a Z85 character too, so a comment is a '#' line that is not a whole key.
        return String(decoding: bytes, as: UTF8.self).split(whereSeparator: { $0 == "\n" || $0 == "\r" })
            .map { Substring($0.trimmingWhitespace) }
            .filter { !$0.isEmpty && !($0.hasPrefix("#") && Z85.decode(String($0))?.count != Ed25519.seedBytes) }
    }
}

extension StringProtocol {
    var trimmingWhitespace: String {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
        guard let first = firstIndex(where: { !blank($0) }), let last = lastIndex(where: { !blank($0) }) else { return "" }
        return String(self[first...last])
    }
}
