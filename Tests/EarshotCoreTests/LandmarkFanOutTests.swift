@testable import EarshotCore
import EarshotTestSupport
import Testing

/// Each reference record says how many targets its peaks are paired with in the index, so a
/// catalog built by an earlier release (three; the field then always 0) keeps its index through
/// edits and merges instead of being re-indexed with fewer landmarks.
struct LandmarkFanOutTests {
    /// The landmarks `peaks` make with `fanOut` targets per anchor: the postings they index.
    static func landmarks(_ reference: CatalogReference, fanOut: Int) -> Int {
        var n = 0
        reference.signature.peaks.withUnsafeBufferPointer { LandmarkHasher.forEachLandmark($0, fanOut: fanOut) { _, _ in n += 1 } }
        return n
    }

    /// `bytes` with reference `index`'s fan-out field set to `value`, the references section's
    /// checksum and the header's sealed again (what an earlier release, or a crafted file, holds).
    static func withFanOutField(_ bytes: [UInt8], reference index: Int, _ value: UInt32) -> [UInt8] {
        var bytes = bytes
        func read(_ at: Int, _ size: Int) -> Int { bytes[at..<(at + size)].reversed().reduce(0) { $0 << 8 | Int($1) } }
        func put(_ v: UInt32, at o: Int) { for k in 0..<4 { bytes[o + k] = UInt8((v >> (8 * UInt32(k))) & 0xFF) } }
        let table = CatalogLayout.headerSize, sections = read(12, 2)
        // The references section is the first entry of the table.
        #expect(read(table, 4) == 1)
        let offset = read(table + 8, 8), length = read(table + 16, 8)
        put(value, at: offset + index * CatalogLayout.referenceRecordSize + 36)
        put(CRC32.checksum(Array(bytes[offset..<(offset + length)])), at: table + 24)
        let tableEnd = table + sections * CatalogLayout.sectionEntrySize
        put(CRC32.checksum(Array(bytes[0..<CatalogLayout.headerChecksummed]) + Array(bytes[table..<tableEnd])),
            at: CatalogLayout.headerChecksummed)
        return bytes
    }

    /// A catalog as an earlier release wrote it: references paired with 3 targets, the field 0.
    static func earlierRelease() throws -> (catalog: CustomCatalog, bytes: [UInt8]) {
        var catalog = CustomCatalog()
        for r in try SyntheticCatalog.make().references {
            try catalog.add(CatalogReference(signature: r.signature, mediaItems: r.mediaItems, cues: r.cues, landmarkFanOut: 3))
        }
        var bytes = try catalog.dataRepresentation()
        for i in catalog.references.indices { bytes = withFanOutField(bytes, reference: i, 0) }
        return (catalog, bytes)
    }

    @Test func aNewCatalogRecordsItsFanOutAndIndexesWithIt() throws {
        let catalog = try SyntheticCatalog.make()
        #expect(catalog.references.allSatisfy { $0.landmarkFanOut == LandmarkHasher.referenceFanOut })
        let mapped = try MappedCatalog(bytes: try catalog.dataRepresentation())
        #expect(mapped.references.map(\.landmarkFanOut) == catalog.references.map { _ in LandmarkHasher.referenceFanOut })
        #expect(mapped.entryCount == catalog.references.reduce(0) { $0 + Self.landmarks($1, fanOut: LandmarkHasher.referenceFanOut) })
    }

    @Test func anEarlierReleasesCatalogKeepsItsIndexThroughEditsAndMerges() throws {
        let (original, bytes) = try Self.earlierRelease()
        let mapped = try MappedCatalog(bytes: bytes)
        #expect(mapped.references.allSatisfy { $0.landmarkFanOut == 3 })
        let threeTargets = original.references.reduce(0) { $0 + Self.landmarks($1, fanOut: 3) }
        #expect(mapped.entryCount == threeTargets)
        #expect(threeTargets > original.references.reduce(0) { $0 + Self.landmarks($1, fanOut: LandmarkHasher.referenceFanOut) })

        // Edited: the same landmarks (now with the field written).
        var edited = try CustomCatalog(dataRepresentation: bytes)
        #expect(edited.references.allSatisfy { $0.landmarkFanOut == 3 })
        try edited.setMediaItems([MediaItem(id: "renamed", title: "Renamed")], forReferenceAt: 1)
        let rewritten = try MappedCatalog(bytes: try edited.dataRepresentation())
        #expect(rewritten.entryCount == threeTargets)
        #expect(rewritten.references.allSatisfy { $0.landmarkFanOut == 3 })
        #expect(try CustomCatalog(dataRepresentation: bytes).dataRepresentation() == (try original.dataRepresentation()))

        // Merged with a catalog built now: each reference keeps its own index.
        let fresh = try SyntheticCatalog.make()
        var merged = try CustomCatalog(dataRepresentation: bytes)
        try merged.merge(fresh)
        let both = try MappedCatalog(bytes: try merged.dataRepresentation())
        #expect(both.references.map(\.landmarkFanOut) == [3, 3, 3] + fresh.references.map { _ in LandmarkHasher.referenceFanOut })
        #expect(both.entryCount == threeTargets + (try MappedCatalog(bytes: try fresh.dataRepresentation())).entryCount)
        #expect(merged.references.map(\.signature) == original.references.map(\.signature) + fresh.references.map(\.signature))
    }

    @Test func aFanOutOutsideOneToSixteenIsRefused() throws {
        let bytes = try SyntheticCatalog.make().dataRepresentation()
        for value: UInt32 in [17, 0xFFFF_FFFF] {
            #expect(throws: EarshotError.catalogInvalid("reference 2 record is inconsistent (landmark fan-out \(value))")) {
                try MappedCatalog(bytes: Self.withFanOutField(bytes, reference: 2, value))
            }
        }
        var catalog = CustomCatalog()
        let r = try SyntheticCatalog.make().references[0]
        #expect(throws: EarshotError.self) {
            try catalog.add(CatalogReference(signature: r.signature, mediaItems: r.mediaItems, cues: r.cues, landmarkFanOut: 0))
        }
        #expect(catalog.references.isEmpty)
    }
}
