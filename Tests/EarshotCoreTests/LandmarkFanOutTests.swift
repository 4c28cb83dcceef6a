@testable import EarshotCore
import EarshotTestSupport
import Testing

/// Each reference record says how many targets its peaks are paired with in the index, so a
/// catalog built before the field was (its 0 there; 3 targets in releases, 2 in some development
/// builds, told apart by the entry count) keeps its index through edits and merges.
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

    /// A catalog as an earlier build wrote it: references paired with `fanOut` targets (3 in every
    /// release, 2 in development builds just before the field), the field 0.
    static func earlierBuild(fanOut: Int) throws -> (catalog: CustomCatalog, bytes: [UInt8]) {
        var catalog = CustomCatalog()
        for r in try SyntheticCatalog.make().references {
            try catalog.add(CatalogReference(signature: r.signature, mediaItems: r.mediaItems, cues: r.cues, landmarkFanOut: fanOut))
        }
        var bytes = try catalog.dataRepresentation()
        for i in catalog.references.indices { bytes = withFanOutField(bytes, reference: i, 0) }
        return (catalog, bytes)
    }

    @Test func aNewCatalogRecordsItsFanOutAndIndexesWithIt() throws {
        let catalog = try SyntheticCatalog.make()
        #expect(catalog.references.allSatisfy { $0.landmarkFanOut == LandmarkHasher.referenceFanOut })
        let mapped = try MappedCatalog(bytes: try catalog.dataRepresentation())
        #expect(mapped.references.allSatisfy { $0.landmarkFanOut == LandmarkHasher.referenceFanOut })
        #expect(mapped.entryCount == catalog.references.reduce(0) { $0 + Self.landmarks($1, fanOut: LandmarkHasher.referenceFanOut) })
    }

    /// The record does not say; the entries do: an edit keeps whichever fan-out the file was built with.
    @Test(arguments: [3, 2]) func anEarlierBuildsCatalogKeepsItsIndexThroughEditsAndMerges(fanOut: Int) throws {
        let (original, bytes) = try Self.earlierBuild(fanOut: fanOut)
        let mapped = try MappedCatalog(bytes: bytes)
        #expect(mapped.references.allSatisfy { $0.landmarkFanOut == nil })
        let built = original.references.reduce(0) { $0 + Self.landmarks($1, fanOut: fanOut) }
        #expect(mapped.entryCount == built)
        #expect(built != original.references.reduce(0) { $0 + Self.landmarks($1, fanOut: 5 - fanOut) })

        // Edited: the same landmarks (now with the field written).
        var edited = try CustomCatalog(dataRepresentation: bytes)
        #expect(edited.references.allSatisfy { $0.landmarkFanOut == fanOut })
        try edited.setMediaItems([MediaItem(id: "renamed", title: "Renamed")], forReferenceAt: 1)
        let rewritten = try MappedCatalog(bytes: try edited.dataRepresentation())
        #expect(rewritten.entryCount == built)
        #expect(rewritten.references.allSatisfy { $0.landmarkFanOut == fanOut })
        #expect(try CustomCatalog(dataRepresentation: bytes).dataRepresentation() == (try original.dataRepresentation()))

        // Merged with a catalog built now: each reference keeps its own index.
        let fresh = try SyntheticCatalog.make()
        var merged = try CustomCatalog(dataRepresentation: bytes)
        try merged.merge(fresh)
        let both = try MappedCatalog(bytes: try merged.dataRepresentation())
        #expect(both.references.map(\.landmarkFanOut) == [fanOut, fanOut, fanOut] + fresh.references.map { _ in LandmarkHasher.referenceFanOut })
        #expect(both.entryCount == built + (try MappedCatalog(bytes: try fresh.dataRepresentation())).entryCount)
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
