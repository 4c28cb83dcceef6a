import EarshotCore
import EarshotSystem
import FoundationEssentials

#if canImport(Glibc)
    import Glibc
#endif

/// What the cue service keeps across restarts, each in one JSON file of the state folder written
/// atomically: the controller's cue replacements (`cue-overrides.json`) and which ONCE cues have
/// fired (`cues-once.json`). A damaged file is set aside with a log line, never fatal: losing it
/// only forgets replacements (the catalog's own cues serve) or lets a ONCE cue fire again.
struct CueStore: Sendable {
    /// The controller's cues for one reference of one catalog version.
    struct Override: Sendable, Codable, Equatable {
        var catalog: String
        var version: Int
        var reference: Int
        var cues: [Cue]
    }

    let overridesPath: String
    let oncePath: String

    init(stateDirectory: String) {
        overridesPath = Path.join(stateDirectory, "cue-overrides.json")
        oncePath = Path.join(stateDirectory, "cues-once.json")
    }

    func loadOverrides() throws(SystemError) -> [Override] {
        guard let bytes = try Self.readIfPresent(overridesPath) else { return [] }
        do { return try JSONDecoder().decode([Override].self, from: Data(bytes)) } catch {
            throw SystemError("\(overridesPath): not a list of cue overrides (\(error))", code: EINVAL)
        }
    }

    func save(_ overrides: [Override]) throws(SystemError) {
        var pieces: [[UInt8]] = []
        for o in overrides { pieces.append(try Self.encode(o)) }
        try save(encoded: pieces)
    }

    /// One override as the file holds it, so a change re-encodes only what changed.
    static func encode(_ override: Override) throws(SystemError) -> [UInt8] {
        try encode(override, for: "cue override")
    }

    /// Writes overrides encoded one by one (`encode`) as the file's list.
    func save(encoded pieces: [[UInt8]]) throws(SystemError) {
        var bytes: [UInt8] = [UInt8(ascii: "[")]
        bytes.reserveCapacity(pieces.reduce(2) { $0 + $1.count + 1 })
        for (i, piece) in pieces.enumerated() {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes += piece
        }
        bytes.append(UInt8(ascii: "]"))
        try AtomicFile.write(bytes, to: overridesPath, mode: 0o600)
    }

    func loadOnce() throws(SystemError) -> CueOnceMemory {
        guard let bytes = try Self.readIfPresent(oncePath) else { return CueOnceMemory() }
        do { return try JSONDecoder().decode(CueOnceMemory.self, from: Data(bytes)) } catch {
            throw SystemError("\(oncePath): not a record of ONCE cues (\(error))", code: EINVAL)
        }
    }

    func save(_ once: CueOnceMemory) throws(SystemError) {
        try Self.write(once, to: oncePath)
    }

    /// Moves a file that could not be read out of the way (kept for whoever wants to look);
    /// says where it went, or that it could not be moved.
    func setAside(_ path: String) -> String {
        let aside = path + ".damaged"
        do throws(SystemError) { try Directory.rename(path, to: aside) } catch { return "could not be set aside (\(error.message))" }
        return "set aside as \(aside)"
    }

    private static func readIfPresent(_ path: String) throws(SystemError) -> [UInt8]? {
        do { return try AtomicFile.read(path) } catch {
            if error.code == ENOENT { return nil }  // never written: nothing kept yet
            throw error
        }
    }

    private static func write<T: Encodable>(_ value: T, to path: String) throws(SystemError) {
        try AtomicFile.write(try encode(value, for: path), to: path, mode: 0o600)
    }

    private static func encode<T: Encodable>(_ value: T, for what: String) throws(SystemError) -> [UInt8] {
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            return [UInt8](try encoder.encode(value))
        } catch {
            throw SystemError("\(what): cannot encode (\(error))", code: EINVAL)
        }
    }
}
