import EarshotCore
import EarshotStore
import EarshotSystem
import EarshotTestSupport
import Foundation
import Synchronization
import Testing

/// Catalog files opened mapped: lookups in place, the full check, stopping it, refusing what
/// is not a regular catalog file with the path in the message.
struct CatalogFileTests {
    @Test func mappedFileOpensAndLooksUp() throws {
        let data = try SyntheticCatalog.make().dataRepresentation()
        let folder = try TemporaryDirectory("earshot-catalog")
        let path = folder.path("t.earcat")
        try AtomicFile.write(data, to: path)
        let mapped = try MappedCatalog(contentsOf: path, verification: .full)
        #expect(mapped.referenceCount == 3)
        #expect(mapped.entryCount > 100)
        // Every reference landmark is found under its key.
        let s = try mapped.signature(ofReference: 1)
        var found = 0, total = 0
        s.peaks.withUnsafeBufferPointer { p in
            LandmarkHasher.forEachLandmark(p, fanOut: LandmarkHasher.referenceFanOut) { lm, _ in
                total += 1
                var hit = false
                mapped.forEachPosting(of: lm.key) { v in
                    if Int(v >> 4) == mapped.references[1].startFrame + Int(lm.frame) { hit = true }
                }
                if hit { found += 1 }
            }
        }
        #expect(total > 0 && found == total)
    }

    @Test func fullVerificationStopsWhenAsked() throws {
        let data = try SyntheticCatalog.make().dataRepresentation()
        let folder = try TemporaryDirectory("earshot-catalog")
        let path = folder.path("stop.earcat")
        try AtomicFile.write(data, to: path)
        do {
            _ = try MappedCatalog(contentsOf: path, shouldStop: { true })
            Issue.record("verification ignored the stop")
        } catch {
            #expect(error.code == 500)
            #expect(error.message.contains("stopped before the end"))
        }
        _ = try MappedCatalog(contentsOf: path, shouldStop: { false })
    }

    /// A FIFO, a socket or a directory named like a catalog is refused at once: opening a FIFO
    /// for reading would wait for a writer forever. (Should the open block after all, a writer
    /// shows up after five seconds, so the test fails instead of hanging.)
    @Test func nonRegularFilesAreRefusedWithoutBlocking() throws {
        let folder = try TemporaryDirectory("earshot-fifo")
        let dir = folder.path
        let fifo = dir + "/x.earcat"
        #expect(mkfifo(fifo, 0o644) == 0)
        let link = dir + "/link.earcat"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: fifo)
        let done = Atomic<Bool>(false)
        let rescuer = Thread {
            let until = Date().addingTimeInterval(5)
            while !done.load(ordering: .acquiring), Date() < until { usleep(10_000) }
            while !done.load(ordering: .acquiring) {
                let fd = open(fifo, O_WRONLY | O_NONBLOCK)
                if fd >= 0 { close(fd) }
                usleep(10_000)
            }
        }
        rescuer.start()
        defer { done.store(true, ordering: .releasing) }
        let started = Date()
        for (path, kind) in [(fifo, "a named pipe"), (link, "a named pipe"), (dir, "a directory")] {
            #expect(throws: EarshotError.catalogInvalid("\(path): is \(kind), not a regular file")) { try MappedCatalog(contentsOf: path) }
            #expect(throws: SystemError("\(path): is \(kind), not a regular file", code: 0)) { try AtomicFile.read(path) }
        }
        #expect(Date().timeIntervalSince(started) < 2, "a FIFO open blocked")
    }

    @Test func missingEmptyAndDirectoryPathsNameTheProblem() throws {
        let folder = try TemporaryDirectory("earshot-catalog")
        let dir = folder.path
        for (path, reason) in [("/nonexistent/x.earcat", "No such file"), (dir, "not a regular file")] {
            do {
                _ = try MappedCatalog(contentsOf: path)
                Issue.record("\(path) accepted")
            } catch {
                #expect(error.message.contains(path))
                #expect(error.message.contains(reason))
            }
        }
        let empty = try folder.write("empty.earcat", [])
        #expect(throws: EarshotError.catalogInvalid("\(empty): file is empty")) { try MappedCatalog(contentsOf: empty) }
    }
}
