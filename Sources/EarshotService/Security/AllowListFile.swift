import EarshotCore
import EarshotSystem
import EarshotTransport
import FoundationEssentials

/// The daemon's allow-list file: one client per line, "<Z85 public key> <name> <role>", '#'
/// comments (a line starting with '#', or '#' after the role) and blank lines ignored. Errors name the line, since people edit it by hand.
public enum AllowListFile {
    public static func parse(_ text: String, origin: String) throws(EarshotError) -> [ClientAllowList.Entry] {
        var entries: [ClientAllowList.Entry] = []
        var names: [String: Int] = [:], keys: [String: Int] = [:]
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let number = index + 1
            var fields = raw.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" }).map(String.init)
            // '#' is also a Z85 character, so a comment is a word starting with '#' that is not
            // in the key's place: a whole line whose first word is not a key, or after the role.
            if let first = fields.first, first.hasPrefix("#"), !CurveKeyPair.isValidKey(first) { continue }
            if fields.count > 3, fields[3].hasPrefix("#") { fields.removeSubrange(3...) }
            if fields.isEmpty { continue }
            func problem(_ what: String) -> EarshotError { .internalError("\(origin) line \(number): \(what)") }
            guard fields.count == 3 else {
                throw problem("expected \"<public key> <name> <role>\", found \(fields.count) field(s)")
            }
            guard CurveKeyPair.isValidKey(fields[0]) else {
                throw problem("\"\(fields[0])\" is not a public key (40 characters of Z85, as printed by earshot keygen)")
            }
            guard !fields[1].contains(":") else { throw problem("a name cannot contain ':'") }
            if let bad = NameRule.problem(fields[1], as: "the name") { throw problem(bad) }
            guard let role = ClientRole(rawValue: fields[2]) else {
                throw problem("unknown role \"\(fields[2])\" (viewer, operator or admin)")
            }
            if let first = keys[fields[0]] { throw problem("this key is already on line \(first)") }
            if let first = names[fields[1]] { throw problem("the name \(fields[1]) is already on line \(first)") }
            keys[fields[0]] = number
            names[fields[1]] = number
            entries.append(.init(publicKey: fields[0], name: fields[1], role: role))
        }
        return entries
    }

    /// Reads and parses `path`; a missing file is created empty (with a comment explaining it),
    /// so a fresh box admits nobody until a client is added.
    public static func load(_ path: String) throws(EarshotError) -> [ClientAllowList.Entry] {
        if !FileManager.default.fileExists(atPath: path) {
            let header = """
                # Earshot clients allowed to connect: "<public key> <name> <role>" per line,
                # role = viewer, operator or admin. `earshot keygen` prints the line to add.
                # Edits take effect within a second (or on SIGHUP); removed keys are cut off.

                """
            do throws(SystemError) { try AtomicFile.write(Array(header.utf8), to: path, mode: 0o644) } catch {
                throw .internalError("\(path): cannot create the allow-list: \(error.message)")
            }
        }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw .internalError("\(path): cannot read the allow-list")
        }
        return try parse(text, origin: path)
    }
}
