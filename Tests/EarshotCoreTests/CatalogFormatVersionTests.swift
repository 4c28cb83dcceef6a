import EarshotTestSupport
import Foundation
import Testing

@testable import EarshotCore

/// Catalogs of format 1 (earlier releases) are read as they are and answer as their upgrade to
/// format 2 does; format 2 holds timelines format 1 cannot.
struct CatalogFormatVersionTests {
    /// Five references of synthetic music (a directory of more than the fewest buckets, so
    /// format 2's records carry key bits of their own) and queries cut from three of them.
    static func makeCatalog() throws -> (CustomCatalog, [(query: Signature, id: String, offset: Double)]) {
        var catalog = CustomCatalog()
        var queries: [(Signature, String, Double)] = []
        for i in 0..<5 {
            let music = SyntheticMusic.make(seed: UInt64(200 + i), duration: 40)
            try catalog.addReferenceSignature(try SyntheticSignature.of(music), representing: [MediaItem(id: "r\(i)")])
            if i % 2 == 0 {
                let excerpt = SyntheticSignature.excerpt(music, start: 11, duration: 8)
                queries.append((try SyntheticSignature.of(excerpt), "r\(i)", 11))
            }
        }
        catalog.maximumQuerySignatureDuration = 12
        return (catalog, queries)
    }

    /// Every posting of every key, in the order a lookup gives them.
    static func postings(_ mapped: MappedCatalog, _ catalog: CustomCatalog) -> [UInt32: [UInt64]] {
        var all: [UInt32: [UInt64]] = [:]
        for reference in catalog.references {
            reference.signature.peaks.withUnsafeBufferPointer { peaks in
                LandmarkHasher.forEachLandmark(peaks, fanOut: reference.landmarkFanOut) { lm, _ in
                    guard all[lm.key] == nil else { return }
                    var values: [UInt64] = []
                    mapped.forEachPosting(of: lm.key) { values.append($0) }
                    all[lm.key] = values
                }
            }
        }
        return all
    }

    @Test func bothFormatsHoldTheSamePostings() throws {
        let (catalog, _) = try Self.makeCatalog()
        let version1 = try MappedCatalog(bytes: try CatalogWriter.encode(catalog, version: 1))
        let version2 = try MappedCatalog(bytes: try catalog.dataRepresentation())
        #expect(version1.formatVersion == 1)
        #expect(version2.formatVersion == 2)
        #expect(version2.formatVersion == MappedCatalog.currentFormatVersion)
        #expect(version1.entryCount == version2.entryCount)
        let (one, two) = (Self.postings(version1, catalog), Self.postings(version2, catalog))
        #expect(one.count > 1000, "keys looked up: \(one.count)")
        #expect(one.values.reduce(0) { $0 + $1.count } == version2.entryCount, "every posting is some landmark's")
        #expect(one == two)
    }

    /// At 2²¹ buckets (a catalog of about 8 million postings) a bucket is one key and a record
    /// holds no key bits; at the fewest, 4 bits, a record holds 17. Both give every key's postings.
    @Test(arguments: [4, 12, 21])
    func everyDirectorySizeHoldsTheSamePostings(bits: Int) throws {
        let (catalog, queries) = try Self.makeCatalog()
        let sized = try MappedCatalog(bytes: try CatalogWriter.encode(catalog, directoryBits: bits))
        let usual = try MappedCatalog(bytes: try catalog.dataRepresentation())
        #expect(sized.indexByteCount == ((1 << bits) + 1) * 4 + 5 * sized.entryCount)
        #expect(Self.postings(sized, catalog) == Self.postings(usual, catalog))
        for (query, _, _) in queries {
            #expect(Matcher(catalog: sized).match(query).mediaItems.first == Matcher(catalog: usual).match(query).mediaItems.first)
        }
    }

    /// A directory grows until a record's frame field (15 + bits) holds every frame of the timeline.
    @Test func theDirectoryHoldsTheTimelinesFrames() {
        #expect(CatalogLayout.directoryBits(forEntries: 10, timelineFrames: 1 << 19) == 4)
        #expect(CatalogLayout.directoryBits(forEntries: 10, timelineFrames: (1 << 19) + 1) == 5)
        #expect(CatalogLayout.directoryBits(forEntries: 10, timelineFrames: 1 << 30) == 15)
        #expect(CatalogLayout.directoryBits(forEntries: 8 << 16, timelineFrames: 100) == 16)
        #expect(CatalogLayout.directoryBits(forEntries: 200_000_000, timelineFrames: 1 << 30) == 21)
    }

    /// Headers and section tables no writer makes, their checksums sealed again: each is refused
    /// with what is wrong, before any lookup could read past a section.
    @Test func craftedHeadersAreRefused() throws {
        let (catalog, _) = try Self.makeCatalog()
        let version2 = try catalog.dataRepresentation(), version1 = try CatalogWriter.encode(catalog, version: 1)
        func sealed(_ bytes: [UInt8]) -> [UInt8] {
            var b = bytes
            let end = CatalogFormatTests.tableEnd(of: b)
            let crc = CRC32.checksum(Array(b[0..<CatalogLayout.headerChecksummed]) + Array(b[CatalogLayout.headerSize..<end]))
            for k in 0..<4 { b[CatalogLayout.headerChecksummed + k] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(k))) }
            return b
        }
        func put(_ value: UInt64, width: Int, at offset: Int, in bytes: [UInt8]) -> [UInt8] {
            var b = bytes
            for k in 0..<width { b[offset + k] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(k))) }
            return sealed(b)
        }
        let bits = Int(version2[24]), fieldRange = EarshotError.catalogInvalid("header fields out of range")
        // Directory bits beyond a version 2 key, and a timeline past what its records' frames hold.
        #expect(throws: fieldRange) { try MappedCatalog(bytes: put(22, width: 4, at: 24, in: version2)) }
        #expect(throws: fieldRange) { try MappedCatalog(bytes: put(1 << UInt64(15 + bits) + 1, width: 8, at: 40, in: version2)) }
        // Version 1 keeps its own limits: 28-bit frames.
        #expect(throws: fieldRange) { try MappedCatalog(bytes: put(1 << 28 + 1, width: 8, at: 40, in: version1)) }
        // Each version's index sections only.
        func relabel(_ bytes: [UInt8], _ from: CatalogLayout.Section, _ to: CatalogLayout.Section) -> [UInt8] {
            var b = bytes
            let entry = stride(from: CatalogLayout.headerSize, to: CatalogFormatTests.tableEnd(of: b), by: CatalogLayout.sectionEntrySize)
                .first { b[$0] == UInt8(from.rawValue) }!
            b[entry] = UInt8(to.rawValue)
            return sealed(b)
        }
        #expect(throws: EarshotError.catalogInvalid("unknown or repeated section kind 4")) {
            try MappedCatalog(bytes: relabel(version2, .postings, .values))
        }
        #expect(throws: EarshotError.catalogInvalid("unknown or repeated section kind 8")) {
            try MappedCatalog(bytes: relabel(version1, .values, .postings))
        }
        // And the versions as written open.
        #expect(try MappedCatalog(bytes: version2).formatVersion == 2 && MappedCatalog(bytes: version1).formatVersion == 1)
    }

    @Test func aVersion1CatalogAnswersAsItsUpgradeDoes() throws {
        let (catalog, queries) = try Self.makeCatalog()
        let version1 = try MappedCatalog(bytes: try CatalogWriter.encode(catalog, version: 1))
        let version2 = try MappedCatalog(bytes: try catalog.dataRepresentation())
        for (query, id, offset) in queries {
            let a = Matcher(catalog: version1).match(query).mediaItems.first
            let b = Matcher(catalog: version2).match(query).mediaItems.first
            #expect(a?.mediaItem.id == id)
            #expect(abs((a?.matchOffset ?? -10) - offset) < 0.5, "offset \(String(describing: a?.matchOffset)) for \(offset)")
            #expect(a == b)
        }
    }

    /// Upgrading reads the references' stored peaks and indexes them again: the result is the
    /// catalog as this build writes it, whatever version it was read from.
    @Test func upgradingRebuildsTheIndexFromTheStoredPeaks() throws {
        var (catalog, _) = try Self.makeCatalog()
        try catalog.setCues([Cue(id: "q", start: 3, duration: 2)], forReferenceAt: 1)
        let version1 = try CatalogWriter.encode(catalog, version: 1)
        let upgraded = try CustomCatalog(dataRepresentation: version1)
        #expect(upgraded == catalog)
        #expect(try upgraded.dataRepresentation() == (try catalog.dataRepresentation()))
        #expect(try MappedCatalog(bytes: try upgraded.dataRepresentation()).formatVersion == 2)
    }

    /// A 650-hour reference puts the next one's postings past format 1's 28-bit frames: format 2
    /// writes it, finds its landmarks at their frames and matches it; format 1 says why it cannot.
    @Test func timelinesLongerThanFormat1sAreWrittenInFormat2() throws {
        var catalog = CustomCatalog()
        let long = try Signature(duration: 650 * 3600, peaks: [Peak(time: 10, bin: 40, magnitude: 1), Peak(time: 20, bin: 60, magnitude: 1)])
        try catalog.addReferenceSignature(long, representing: [MediaItem(id: "long")])
        let music = SyntheticMusic.make(seed: 300, duration: 30)
        try catalog.addReferenceSignature(try SyntheticSignature.of(music), representing: [MediaItem(id: "late")])
        catalog.maximumQuerySignatureDuration = 12
        #expect(throws: EarshotError.catalogInvalid("catalog exceeds 596 hours of reference audio")) {
            try CatalogWriter.encode(catalog, version: 1)
        }
        let mapped = try MappedCatalog(bytes: try catalog.dataRepresentation())
        let start = mapped.references[1].startFrame
        #expect(start > 1 << 28)
        var found = 0, total = 0
        catalog.references[1].signature.peaks.withUnsafeBufferPointer { peaks in
            LandmarkHasher.forEachLandmark(peaks, fanOut: LandmarkHasher.referenceFanOut) { lm, _ in
                total += 1
                var hit = false
                mapped.forEachPosting(of: lm.key) { if Int($0 >> 4) == start + Int(lm.frame) { hit = true } }
                if hit { found += 1 }
            }
        }
        #expect(total > 100 && found == total, "\(found) of \(total) landmarks found at their frames")
        let query = try SyntheticSignature.of(SyntheticSignature.excerpt(music, start: 9, duration: 8))
        let best = Matcher(catalog: mapped).match(query).mediaItems.first
        #expect(best?.mediaItem.id == "late")
        #expect(abs((best?.matchOffset ?? -10) - 9) < 0.5)
    }

    @Test func aTimelineBeyondFormat2sIsRefusedWhenAdded() throws {
        var catalog = CustomCatalog()
        let long = try Signature(duration: 1_300 * 3600, peaks: [Peak(time: 10, bin: 40, magnitude: 1)])
        try catalog.addReferenceSignature(long, representing: [MediaItem(id: "a")])
        #expect(throws: EarshotError.catalogInvalid("catalog would exceed 2386 hours of reference audio")) {
            try catalog.addReferenceSignature(long, representing: [MediaItem(id: "b")])
        }
        #expect(catalog.references.count == 1)
    }
}
