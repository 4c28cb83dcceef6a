import EarshotTestSupport
import Foundation
import Synchronization
import Testing

@testable import EarshotCore

struct CatalogFormatTests {
    static func makeCatalog() throws -> CustomCatalog { try SyntheticCatalog.make() }

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

    /// The catalog's metadata keeps dates to the last bit (the CSV and the wire use the same
    /// codec), including fractions and dates before 1970.
    @Test func datesKeepTheirFractionalSeconds() throws {
        var catalog = CustomCatalog()
        let dates = [Date(timeIntervalSince1970: 1_714_594_500.125), Date(timeIntervalSince1970: 1_700_000_000.000_123),
                     Date(timeIntervalSince1970: -86_400 * 365.25 * 30 + 0.5), Date(timeIntervalSince1970: 1_714_521_600)]
        let s = try SyntheticSignature.of(SyntheticMusic.make(seed: 7, duration: 6))
        try catalog.addReferenceSignature(s, representing: dates.enumerated().map { MediaItem(id: "d\($0.offset)", creationDate: $0.element) })
        let data = try catalog.dataRepresentation()
        let back = try CustomCatalog(dataRepresentation: data)
        #expect(back.references[0].mediaItems.map(\.creationDate) == dates)
        #expect(try back.dataRepresentation() == data)
        #expect(ISODate.render(dates[0]) == "2024-05-01T20:15:00.125Z")
        #expect(ISODate.render(dates[3]) == "2024-05-01")
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
        let long = try Signature(duration: 1_300 * 3600, peaks: [Peak(time: 10, bin: 40, magnitude: 1)])
        var a = CustomCatalog()
        try a.addReferenceSignature(long, representing: [MediaItem(id: "a")])
        var b = CustomCatalog()
        b.maximumQuerySignatureDuration = 20
        try b.addReferenceSignature(long, representing: [MediaItem(id: "b")])
        let before = a
        #expect(throws: EarshotError.self) { try a.merge(b) }  // 2 600 h exceeds the timeline
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
        let tableEnd = Self.tableEnd(of: data)
        // Header and section table: every byte.
        for position in 0..<tableEnd {
            var corrupt = data
            corrupt[position] ^= 0x01
            #expect(throws: EarshotError.self, "flip at \(position) accepted") { try MappedCatalog(bytes: corrupt, verification: .structure) }
        }
        // Anywhere in the file: full verification catches it.
        for position in stride(from: tableEnd, to: data.count, by: 97) {
            var corrupt = data
            corrupt[position] ^= 0x80
            #expect(throws: EarshotError.self, "flip at \(position) accepted") {
                try MappedCatalog(bytes: corrupt, verification: .full)
            }
        }
    }

    /// Where the section table of a catalog image ends (the header says how many sections).
    static func tableEnd(of data: [UInt8]) -> Int {
        let sectionCount = Int(data[CatalogLayout.magic.count + 4]) | Int(data[CatalogLayout.magic.count + 5]) << 8
        return CatalogLayout.headerSize + sectionCount * CatalogLayout.sectionEntrySize
    }

    /// Offset and length of section `kind` in a catalog image, from its section table.
    static func section(_ kind: CatalogLayout.Section, in data: [UInt8]) -> Range<Int> {
        func load<T: FixedWidthInteger>(_ at: Int, _: T.Type) -> T {
            data[at..<(at + MemoryLayout<T>.size)].reversed().reduce(0) { $0 << 8 | T($1) }
        }
        let entry = stride(from: CatalogLayout.headerSize, to: tableEnd(of: data), by: CatalogLayout.sectionEntrySize)
            .first { load($0, UInt32.self) == kind.rawValue }!
        let offset = Int(load(entry + 8, UInt64.self)), length = Int(load(entry + 16, UInt64.self))
        return offset..<(offset + length)
    }

    /// The daemon and the CLI open catalogs with the default, full verification: a flipped bit
    /// in the index is caught there, though a structure-only open cannot see it.
    @Test func indexCorruptionIsCaughtByTheDefaultVerification() throws {
        var data = try Self.makeCatalog().dataRepresentation()
        let postings = Self.section(.postings, in: data)
        data[postings.lowerBound + postings.count / 2] ^= 0x04
        _ = try MappedCatalog(bytes: data, verification: .structure)
        #expect(throws: EarshotError.catalogInvalid("checksum mismatch in section postings (file corrupt)")) {
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

    /// The matcher sizes its offset range by the longest query a catalog accepts: a header that
    /// claims one longer than any catalog can hold is refused (a crafted one once made the
    /// matcher trap or ask for gigabytes), however sound its checksum; and no catalog is written
    /// with one.
    @Test func aQueryLimitBeyondAnyCatalogIsRefused() throws {
        var catalog = try Self.makeCatalog()
        catalog.maximumQuerySignatureDuration = 1e12
        #expect(throws: EarshotError.self) { try catalog.dataRepresentation() }

        let sound = try Self.makeCatalog()
        var data = try sound.dataRepresentation()
        _ = try MappedCatalog(bytes: data)
        let longest = withUnsafeBytes(of: sound.maximumQuerySignatureDuration.bitPattern.littleEndian, Array.init)
        let at = try #require((0...(CatalogLayout.headerChecksummed - 8)).first { Array(data[$0..<($0 + 8)]) == longest },
                              "the header holds the longest query")
        data.replaceSubrange(at..<(at + 8), with: withUnsafeBytes(of: Double(1e12).bitPattern.littleEndian, Array.init))
        let tableEnd = Self.tableEnd(of: data)
        let crc = data.withUnsafeBytes { raw in
            CRC32.checksum(UnsafeRawBufferPointer(rebasing: raw[CatalogLayout.headerSize..<tableEnd]),
                           continuing: CRC32.checksum(UnsafeRawBufferPointer(rebasing: raw[0..<CatalogLayout.headerChecksummed])))
        }
        data.replaceSubrange(CatalogLayout.headerChecksummed..<(CatalogLayout.headerChecksummed + 4),
                             with: withUnsafeBytes(of: crc.littleEndian, Array.init))
        #expect(throws: EarshotError.catalogInvalid("header fields out of range")) { try MappedCatalog(bytes: data) }
    }

    /// A directory is not checksummed at a `.structure` open (the daemon's quick open of a catalog
    /// it verified before), so a file changed on disk since can hold any directory. Lookups,
    /// batched (`warmPostings`) or one by one, stay inside the arrays whatever it holds.
    @Test(arguments: [UInt16(1), 2])
    func aHostileDirectoryLeadsNowhere(formatVersion: UInt16) throws {
        let catalog = try Self.makeCatalog()
        let data = try CatalogWriter.encode(catalog, version: formatVersion)
        let query = try Signature(duration: 8, peaks: catalog.references[1].signature.peaks.filter { $0.time >= 100 && $0.time < 100 + 8 / Float(FingerprintParameters.hopDuration) }
            .map { Peak(time: $0.time - 100, bin: $0.bin, magnitude: $0.magnitude) })
        let pristine = try MappedCatalog(bytes: data)
        #expect(Matcher(catalog: pristine).match(query).mediaItems.first?.mediaItem.id == "ep1", "the query matches the unharmed catalog")

        let directory = Self.section(.directory, in: data)
        let offset = directory.lowerBound, length = directory.count
        let entries = pristine.entryCount
        var random = SeededRandom(seed: 7)
        let hostile: [(String, (Int) -> UInt32)] = [
            ("past the end", { _ in UInt32.max }),
            ("just past the end", { _ in UInt32(entries + 1) }),
            // Buckets of one entry each, all far beyond the arrays: only the bound on a bucket's
            // end keeps a lookup out.
            ("short buckets past the end", { i in UInt32.max - UInt32(length / 4) + UInt32(i) }),
            ("random", { _ in UInt32(truncatingIfNeeded: random.next()) }),
        ]
        for (name, value) in hostile {
            var bytes = data
            for i in 0..<(length / 4) {
                bytes.replaceSubrange((offset + 4 * i)..<(offset + 4 * i + 4), with: withUnsafeBytes(of: value(i).littleEndian, Array.init))
            }
            #expect(throws: EarshotError.self, "\(name): a full check finds it") { try MappedCatalog(bytes: bytes) }
            let mapped = try MappedCatalog(bytes: bytes, verification: .structure)
            var keys: [UInt32] = []
            catalog.references[1].signature.peaks.withUnsafeBufferPointer { peaks in
                LandmarkHasher.forEachLandmark(peaks, fanOut: LandmarkHasher.referenceFanOut) { lm, _ in keys.append(lm.key) }
            }
            try #require(!keys.isEmpty)
            _ = keys.withUnsafeBufferPointer { mapped.warmPostings(of: $0) }
            var found = 0
            for key in keys { mapped.forEachPosting(of: key) { _ in found += 1 } }
            // Whatever a lookup returns lies inside the values array: a match runs to its end.
            _ = Matcher(catalog: mapped).match(query)
            if name != "random" { #expect(found == 0, "\(name): no bucket lies inside the arrays") }
        }
    }

    @Test func shortForeignFilesAreForeignNotTruncated() {
        #expect(throws: EarshotError.catalogInvalid("not an Earshot catalog (bad magic number)")) {
            try MappedCatalog(bytes: Array("hi\n".utf8))
        }
        #expect(throws: EarshotError.signatureInvalid("not an Earshot signature (bad magic number)")) {
            try Signature(dataRepresentation: Array("hi\n".utf8))
        }
    }

    @Test func rejectsForeignAndOtherVersions() throws {
        #expect(throws: EarshotError.catalogInvalid("not an Earshot catalog (bad magic number)")) {
            try MappedCatalog(bytes: Array("just some text that is long enough to hold a header, honestly it is".utf8) + [UInt8](repeating: 32, count: 64))
        }
        var data = try Self.makeCatalog().dataRepresentation()
        data[8] = 3
        #expect(throws: EarshotError.catalogInvalid("unsupported catalog format version 3 (this build reads 1 to 2)")) {
            try MappedCatalog(bytes: data)
        }
        let signatureBytes = try SyntheticSignature.of(SyntheticMusic.make(seed: 1, duration: 3)).dataRepresentation
        #expect(throws: EarshotError.self) { try MappedCatalog(bytes: signatureBytes) }
    }

}

struct CommonKeyTests {
    /// A key that occurs more than `maximumPostingsPerKey` times (a two-note figure repeated all
    /// through a long reference) is skipped; a rare key of the same catalog is still found.
    @Test func aKeyThatOccursEverywhereIsSkippedAndOthersAreNot() throws {
        // Every 32 frames: bin 50, then bin 60 five frames later. 1200 s gives ≈ 1170 of each pair.
        let frames = Int(1200 / FingerprintParameters.hopDuration)
        var peaks: [Peak] = []
        for t in stride(from: 0, to: frames - 40, by: 32) {
            peaks.append(Peak(time: Float(t), bin: 50, magnitude: 10))
            peaks.append(Peak(time: Float(t + 5), bin: 60, magnitude: 10))
        }
        let rare = [Peak(time: 10, bin: 100, magnitude: 10), Peak(time: 17, bin: 130, magnitude: 10)]
        var catalog = CustomCatalog()
        try catalog.addReferenceSignature(try Signature(duration: 1200, peaks: peaks), representing: [MediaItem(id: "figure")])
        try catalog.addReferenceSignature(try Signature(duration: 20, peaks: rare), representing: [MediaItem(id: "rare")])
        let mapped = try MappedCatalog(bytes: try catalog.dataRepresentation())
        func postings(f1: Int, dt: Int, df: Int) -> Int {
            var n = 0
            mapped.forEachPosting(of: LandmarkHasher.landmark(t1: 0, f1: f1, dt: dt, df: df, anchorBin: Float(f1)).key) { _ in n += 1 }
            return n
        }
        #expect(frames / 32 > MappedCatalog.maximumPostingsPerKey)
        #expect(postings(f1: 50, dt: 5, df: 10) == 0)
        #expect(postings(f1: 100, dt: 7, df: 30) == 1)
    }
}
