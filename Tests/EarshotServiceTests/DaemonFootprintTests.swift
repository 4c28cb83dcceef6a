import Foundation
import Testing

/// earshotd links no more of Foundation than FoundationEssentials: Foundation itself,
/// FoundationInternationalization and ICU would add about 10 MB to its memory and 40 MB to the
/// static arm64 binary (benchmarks/RESULTS.md, "Board: earshotd on a Raspberry Pi budget"). The
/// import table of docs/ARCHITECTURE.md keeps Earshot's own targets from importing them; this checks the built
/// daemon, so a dependency that brings Foundation back (a package trait, say) is caught too.
struct DaemonFootprintTests {
    @Test func earshotdLinksNoFoundationBeyondEssentials() throws {
        let needed = try Self.neededLibraries(of: DaemonHarness.executable())
        #expect(needed.contains("libzmq.so.5"), "readelf listed \(needed)")
        for library in ["libFoundation.so", "libFoundationInternationalization.so", "lib_FoundationICU.so", "libFoundationNetworking.so"] {
            #expect(!needed.contains(library), "earshotd needs \(library): a target of the daemon imports Foundation")
        }
    }

    /// The DT_NEEDED entries of an ELF file, as `readelf -d` lists them.
    static func neededLibraries(of path: String) throws -> [String] {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/readelf")
        p.arguments = ["-d", "-W", path]
        let pipe = Pipe()
        p.standardOutput = pipe
        try p.run()
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "readelf -d \(path) failed")
        return text.split(separator: "\n").filter { $0.contains("(NEEDED)") }.compactMap { line in
            guard let open = line.firstIndex(of: "["), let close = line.lastIndex(of: "]") else { return nil }
            return String(line[line.index(after: open)..<close])
        }
    }
}
