import EarshotCore
import EarshotCrypto
import EarshotSystem
import FoundationEssentials
import Logging

/// `<state>/catalogs.json`: what the catalog files cannot say about themselves — each name's
/// version, whether it is enabled, when it was installed, and the digest and identity of the
/// file that version is (so a start need not hash an unchanged file again, and a file changed
/// while the daemon was down counts as a new version). Written atomically.
enum CatalogIndex {
    struct Record: Equatable {
        var name: String
        var version: Int
        var enabled: Bool
        var sha256: [UInt8]?
        var installedAt: Date?
        /// [device, inode, size, mtime s, mtime ns]
        var identity: [Int64]?

        static func stamp(_ i: FileIdentity) -> [Int64] {
            [Int64(bitPattern: i.device), Int64(bitPattern: i.inode), i.size, Int64(i.modifiedSeconds), Int64(i.modifiedNanoseconds)]
        }
    }

    /// The records by name; an unreadable index is logged and treated as empty (every file then
    /// starts at version 1, enabled).
    static func read(_ path: String, logger: Logger) -> [String: Record] {
        guard FileManager.default.fileExists(atPath: path) else { return [:] }
        guard let bytes = try? AtomicFile.read(path),
              case .object(let root)? = JSONValue(jsonText: String(decoding: bytes, as: UTF8.self)),
              case .object(let catalogs)? = root["catalogs"]
        else {
            logger.error("catalog index \(path) is unreadable: versions restart at 1 and every catalog is enabled")
            return [:]
        }
        var out: [String: Record] = [:]
        for (name, value) in catalogs {
            guard case .object(let o) = value, case .number(let number)? = o["version"], let version = Int(exactly: number),
                  (0...Int(Int32.max)).contains(version)
            else { continue }
            var r = Record(name: name, version: version, enabled: true)
            if case .bool(let e)? = o["enabled"] { r.enabled = e }
            if case .string(let hex)? = o["sha256"] { r.sha256 = SHA256.digest(hex: hex) }
            if case .string(let date)? = o["installed"] { r.installedAt = ISODate.parse(date) }
            if case .array(let a)? = o["identity"] {
                let numbers = a.compactMap { v -> Int64? in if case .number(let n) = v { return Int64(exactly: n) } else { return nil } }
                if numbers.count == 5 { r.identity = numbers }
            }
            out[name] = r
        }
        return out
    }

    static func write(_ records: [Record], to path: String) throws(SystemError) {
        var catalogs: [String: JSONValue] = [:]
        for r in records {
            var o: [String: JSONValue] = ["version": .number(Double(r.version)), "enabled": .bool(r.enabled)]
            if let d = r.sha256 { o["sha256"] = .string(SHA256.hex(d)) }
            if let t = r.installedAt { o["installed"] = .string(ISODate.render(t)) }
            // Inodes and times fit a double exactly far beyond any real value (2^53).
            if let i = r.identity { o["identity"] = .array(i.map { .number(Double($0)) }) }
            catalogs[r.name] = .object(o)
        }
        let text = JSONValue.object(["catalogs": .object(catalogs)]).prettyJSONText + "\n"
        try AtomicFile.write(Array(text.utf8), to: path, mode: 0o644)
    }
}
