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
        try Self.write(overrides, to: overridesPath)
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
        let bytes: Data
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            bytes = try encoder.encode(value)
        } catch {
            throw SystemError("\(path): cannot encode (\(error))", code: EINVAL)
        }
        try AtomicFile.write([UInt8](bytes), to: path, mode: 0o600)
    }
}
