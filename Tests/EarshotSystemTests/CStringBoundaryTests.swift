import EarshotSystem
import EarshotTestSupport
import Foundation
import Testing

/// Paths crossing into the C library: one with a NUL inside is refused by every wrapper, never
/// cut at the NUL to name something else.
struct CStringBoundaryTests {
    @Test func pathsWithANULAreRefusedAndNothingIsMadeAtThePartBeforeIt() throws {
        let paths = try PathsWithANUL()
        let folder = paths.folder
        for (bad, existing, suffix) in paths.cases {
            func refused(_ what: String, _ body: () throws(SystemError) -> Void) {
                do throws(SystemError) {
                    try body()
                    Issue.record("\(what) accepted \(bad.debugDescription)")
                } catch { #expect(error.code == EINVAL && error.message.contains("NUL"), "\(what): \(error)") }
            }
            refused("AtomicFile.write") { () throws(SystemError) in try AtomicFile.write([1], to: bad) }
            refused("AtomicFile.read") { () throws(SystemError) in _ = try AtomicFile.read(existing) }
            refused("PartFile") { () throws(SystemError) in _ = try PartFile(path: bad) }
            refused("Directory.create") { () throws(SystemError) in try Directory.create(bad) }
            refused("Directory.remove") { () throws(SystemError) in try Directory.remove(existing) }
            refused("Directory.rename from") { () throws(SystemError) in try Directory.rename(existing, to: folder.path("other")) }
            refused("Directory.rename to") { () throws(SystemError) in try Directory.rename(folder.path("real"), to: bad) }
            refused("Directory.names") { () throws(SystemError) in _ = try Directory.names(in: folder.path("") + suffix) }
            refused("MappedFile") { () throws(SystemError) in _ = try MappedFile(path: existing) }
            refused("RegularFile") { () throws(SystemError) in _ = try RegularFile.openForReading(existing) }
            refused("DirectoryWatcher") { () throws(SystemError) in _ = try DirectoryWatcher(path: folder.path("") + suffix) }
            #expect(FileIdentity(path: existing) == nil)
            #expect(Directory.availableBytes(at: folder.path("") + suffix) == nil)
            #expect(!Directory.setMode(existing, 0o600))
            #expect(paths.untouched, "the file before the NUL is untouched, and nothing was made at the part before it")
        }
    }
}
