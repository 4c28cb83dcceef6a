import EarshotTestSupport
import Foundation
import Synchronization
import Testing

@testable import EarshotCore

struct CatalogFormatTests {
    static func makeCatalog() throws -> CustomCatalog {
        var c = CustomCatalog()
        for i in 0..<3 {
            let s = try SyntheticSignature.of(SyntheticMusic.make(seed: UInt64(100 + i), duration: 12))
            try c.addReferenceSignature(s, representing: [
                MediaItem(id: "ep\(i)", title: "Episode \(i)", artist: "Studio", genres: ["quiz"],
                          explicitContent: false, creationDate: Date(timeIntervalSince1970: 1_700_000_000),
                          customProperties: ["question": .object(["text": .string("2+2?"), "answer": .number(4)])]),
                MediaItem(id: "ep\(i)-q1", title: "Question 1", timeRanges: [2..<5], frequencySkewRanges: [-0.01..<0.01]),
            ])
        }
        c.maximumQuerySignatureDuration = 10
        return c
    }

    @Test func roundTripPreservesEverything() throws {
        let catalog = try Self.makeCatalog()
        let data = try catalog.dataRepresentation()
        let back = try CustomCatalog(dataRepresentation: data)
        #expect(back.references.count == 3)
        #expect(back.maximumQuerySignatureDuration == 10)
        #expect(back.references.map(\.mediaItems) == catalog.references.map(\.mediaItems))
        #expect(back.references[0].signature.peaks.count == catalog.references[0].signature.peaks.count)
        #expect(try back.dataRepresentation() == data)
    }

    @Test func mappedFileOpensAndLooksUp() throws {
        let data = try Self.makeCatalog().dataRepresentation()
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("t-\(UUID()).earcat").path
        defer { try? FileManager.default.removeItem(atPath: path) }
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

    @Test func mergeAddsReferencesAndLoosensLimits() throws {
        var a = try Self.makeCatalog()
        var b = CustomCatalog()
        b.minimumQuerySignatureDuration = 0.5
        try b.addReferenceSignature(a.references[0].signature, representing: [MediaItem(id: "x")])
        try a.merge(b)
        #expect(a.references.count == 4)
        #expect(a.minimumQuerySignatureDuration == 0.5)
        #expect(a.maximumQuerySignatureDuration == 12)
    }

    @Test func failedMergeLeavesTheCatalogUnchanged() throws {
        let long = try Signature(duration: 300 * 3600, peaks: [Peak(time: 10, bin: 40, magnitude: 1)])
        var a = CustomCatalog()
        try a.addReferenceSignature(long, representing: [MediaItem(id: "a")])
        var b = CustomCatalog()
        b.maximumQuerySignatureDuration = 20
        try b.addReferenceSignature(long, representing: [MediaItem(id: "b")])
        let before = a
        #expect(throws: EarshotError.self) { try a.merge(b) }  // 600 h exceeds the timeline
        #expect(a == before)
    }

    @Test func rejectsBadEdits() throws {
        var c = CustomCatalog()
        let s = try SyntheticSignature.of(SyntheticMusic.make(seed: 1, duration: 4))
        #expect(throws: EarshotError.self) { try c.addReferenceSignature(s, representing: []) }
        #expect(throws: EarshotError.self) { try c.addReferenceSignature(s, representing: [MediaItem(id: "")]) }
        #expect(throws: EarshotError.self) {
            try c.addReferenceSignature(s, representing: [MediaItem(timeRanges: [5..<5])])
        }
        c.minimumQuerySignatureDuration = 20
        #expect(throws: EarshotError.self) { try c.dataRepresentation() }
        // Edits of references that do not exist are refused, not trapped.
        try c.addReferenceSignature(s, representing: [MediaItem(id: "a")])
        #expect(throws: EarshotError.catalogInvalid("no reference 3: the catalog has 1 (0–0)")) { try c.removeReference(at: 3) }
        #expect(throws: EarshotError.self) { try c.setMediaItems([MediaItem(id: "b")], forReferenceAt: -1) }
        #expect(c.references.map(\.mediaItems[0].id) == ["a"])
    }

    @Test func rejectsTruncationAtAnyPoint() throws {
        let data = try Self.makeCatalog().dataRepresentation()
        for cut in [0, 8, 95, 96, 200, data.count / 2, data.count - 1] {
            do {
                _ = try MappedCatalog(bytes: Array(data[0..<cut]))
                Issue.record("catalog truncated at \(cut) accepted")
            } catch {
                #expect(error.code == 300)
            }
        }
    }

    @Test func rejectsBitFlips() throws {
        let data = try Self.makeCatalog().dataRepresentation()
        // Header and section table: every byte.
        for position in 0..<(96 + 6 * 32) {
            var corrupt = data
            corrupt[position] ^= 0x01
            #expect(throws: EarshotError.self, "flip at \(position) accepted") { try MappedCatalog(bytes: corrupt, verification: .structure) }
        }
        // Anywhere in the file: full verification catches it.
        for position in stride(from: 96 + 6 * 32, to: data.count, by: 97) {
            var corrupt = data
            corrupt[position] ^= 0x80
            #expect(throws: EarshotError.self, "flip at \(position) accepted") {
                try MappedCatalog(bytes: corrupt, verification: .full)
            }
        }
    }

    /// Offset and length of section `kind` in a catalog image, from its section table.
    private static func section(_ kind: UInt32, in data: [UInt8]) -> Range<Int> {
        func load<T: FixedWidthInteger>(_ at: Int, _: T.Type) -> T {
            data[at..<(at + MemoryLayout<T>.size)].reversed().reduce(0) { $0 << 8 | T($1) }
        }
        let entry = (0..<6).map { 96 + 32 * $0 }.first { load($0, UInt32.self) == kind }!
        let offset = Int(load(entry + 8, UInt64.self)), length = Int(load(entry + 16, UInt64.self))
        return offset..<(offset + length)
    }

    /// The daemon and the CLI open catalogs with the default, full verification: a flipped bit
    /// in the index is caught there, though a structure-only open cannot see it.
    @Test func indexCorruptionIsCaughtByTheDefaultVerification() throws {
        var data = try Self.makeCatalog().dataRepresentation()
        let values = Self.section(4, in: data)
        data[values.lowerBound + values.count / 2] ^= 0x04
        _ = try MappedCatalog(bytes: data, verification: .structure)
        #expect(throws: EarshotError.catalogInvalid("checksum mismatch in section values (file corrupt)")) {
            try MappedCatalog(bytes: data)
        }
    }

    /// A catalog ends exactly where its last section does: zeros appended are refused like any
    /// other bytes.
    @Test func bytesAfterTheLastSectionAreRefused() throws {
        let data = try Self.makeCatalog().dataRepresentation()
        for tail: [UInt8] in [[0], [0x41], [UInt8](repeating: 0, count: 16), Array("appended".utf8)] {
            _ = try MappedCatalog(bytes: data + tail, verification: .structure)
            do {
                _ = try MappedCatalog(bytes: data + tail)
                Issue.record("\(tail.count) trailing bytes accepted")
            } catch {
                #expect(error.code == 300)
                #expect(error.message.contains("\(tail.count) unexpected byte\(tail.count == 1 ? "" : "s") after the last section"), "\(error.message)")
            }
        }
    }

    @Test func fullVerificationStopsWhenAsked() throws {
        let data = try Self.makeCatalog().dataRepresentation()
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("stop-\(UUID()).earcat").path
        defer { try? FileManager.default.removeItem(atPath: path) }
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
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("fifo-\(UUID())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
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
            #expect(throws: EarshotError.internalError("\(path): is \(kind), not a regular file")) { try AtomicFile.read(path) }
        }
        #expect(Date().timeIntervalSince(started) < 2, "a FIFO open blocked")
    }

    @Test func shortForeignFilesAreForeignNotTruncated() {
        #expect(throws: EarshotError.catalogInvalid("not an Earshot catalog (bad magic number)")) {
            try MappedCatalog(bytes: Array("hi\n".utf8))
        }
        #expect(throws: EarshotError.signatureInvalid("not an Earshot signature (bad magic number)")) {
            try Signature(dataRepresentation: Array("hi\n".utf8))
        }
    }

    @Test func atomicWriteKeepsPermissionsOfReplacedFile() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("perm-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try AtomicFile.write([1], to: path, mode: 0o600)
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int == 0o600)
        try AtomicFile.write([2], to: path)
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int == 0o600)
    }

    @Test func atomicWriteCanForceASecretsMode() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("perm-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try AtomicFile.write([1], to: path, mode: 0o644)
        try AtomicFile.write([2], to: path, mode: 0o600, forceMode: true)
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int == 0o600)
    }

    @Test func staleTemporariesOfDeadWritersAreRemoved() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("stale-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let finished = Process()
        finished.executableURL = URL(fileURLWithPath: "/bin/true")
        try finished.run()
        finished.waitUntilExit()
        let dead = finished.processIdentifier
        let names = [".a.earcat.tmp-\(dead)-17", ".b.key.tmp-\(getpid())-18", "c.tmp-\(dead)-19", ".d.tmp-x-1", "e.earcat"]
        for name in names { _ = FileManager.default.createFile(atPath: folder.appendingPathComponent(name).path, contents: Data([1])) }
        #expect(AtomicFile.removeStaleTemporaries(in: folder.path) == [".a.earcat.tmp-\(dead)-17"])
        let left = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        #expect(left == Array(names.dropFirst()).sorted(), "a live writer's file and other names stay")
    }

    @Test func rejectsForeignAndOtherVersions() throws {
        #expect(throws: EarshotError.catalogInvalid("not an Earshot catalog (bad magic number)")) {
            try MappedCatalog(bytes: Array("just some text that is long enough to hold a header, honestly it is".utf8) + [UInt8](repeating: 32, count: 64))
        }
        var data = try Self.makeCatalog().dataRepresentation()
        data[8] = 2
        do {
            _ = try MappedCatalog(bytes: data)
            Issue.record("version 2 accepted")
        } catch {
            #expect(error.message.contains("version 2"))
        }
        let signatureBytes = try SyntheticSignature.of(SyntheticMusic.make(seed: 1, duration: 3)).dataRepresentation
        #expect(throws: EarshotError.self) { try MappedCatalog(bytes: signatureBytes) }
    }

    @Test func missingEmptyAndDirectoryPathsNameTheProblem() throws {
        let dir = FileManager.default.temporaryDirectory.path
        for (path, reason) in [("/nonexistent/x.earcat", "No such file"), (dir, "not a regular file")] {
            do {
                _ = try MappedCatalog(contentsOf: path)
                Issue.record("\(path) accepted")
            } catch {
                #expect(error.message.contains(path))
                #expect(error.message.contains(reason))
            }
        }
        let empty = dir + "/empty-\(UUID()).earcat"
        _ = FileManager.default.createFile(atPath: empty, contents: Data())
        defer { try? FileManager.default.removeItem(atPath: empty) }
        #expect(throws: EarshotError.catalogInvalid("\(empty): file is empty")) { try MappedCatalog(contentsOf: empty) }
    }

    @Test func atomicWriteReplacesWholeFileAndLeavesNoTemporaries() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("aw-\(UUID())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/c.earcat"
        try AtomicFile.write([1, 2, 3], to: path)
        try AtomicFile.write([4, 5], to: path)
        #expect(try AtomicFile.read(path) == [4, 5])
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["c.earcat"])
        #expect(throws: EarshotError.self) { try AtomicFile.write([1], to: dir + "/missing/x") }
    }
}
