import EarshotCore
import EarshotTestSupport
import Foundation
import Testing

@testable import EarshotService

/// The cue service's files: what survives a restart, and what a damaged file does.
struct CueStoreTests {
    @Test func overridesAndOnceMemoryRoundTripAndStartEmpty() throws {
        let folder = try TemporaryDirectory("cue-store")
        let store = CueStore(stateDirectory: folder.path)
        #expect(try store.loadOverrides().isEmpty)  // never written
        #expect(try store.loadOnce() == CueOnceMemory())
        let override = CueStore.Override(catalog: "show", version: 3, reference: 1,
                                         cues: [Cue(id: "q", cueClass: "quiz", start: 4, flags: [.once])])
        try store.save([override])
        #expect(try store.loadOverrides() == [override])
        // Written from overrides encoded one by one: the same file, read back the same.
        let second = CueStore.Override(catalog: "show", version: 3, reference: 2, cues: [Cue(id: "r", start: 1, duration: 2)])
        try store.save(encoded: [try CueStore.encode(override), try CueStore.encode(second)])
        #expect(try store.loadOverrides() == [override, second])
        try store.save(encoded: [])
        #expect(try store.loadOverrides().isEmpty)
    }

    @Test func aDamagedFileIsAClearErrorAndIsSetAsideNotDeleted() throws {
        let folder = try TemporaryDirectory("cue-store")
        let store = CueStore(stateDirectory: folder.path)
        try Data("{not json".utf8).write(to: URL(fileURLWithPath: store.overridesPath))
        #expect(throws: (any Error).self) { try store.loadOverrides() }
        do { _ = try store.loadOverrides() } catch { #expect(error.message.contains("not a list of cue overrides")) }
        #expect(store.setAside(store.overridesPath) == "set aside as \(store.overridesPath).damaged")
        #expect(FileManager.default.fileExists(atPath: store.overridesPath + ".damaged"))
        #expect(try store.loadOverrides().isEmpty)
        // A FIFO in its place is refused at once, not waited on.
        #expect(mkfifo(store.oncePath, 0o600) == 0)
        #expect(throws: (any Error).self) { try store.loadOnce() }
    }
}
