/// Constants of the `.earcat` format, version 1 (documented in `docs/FORMATS.md`).
enum CatalogLayout {
    static let magic: [UInt8] = Array("EARCAT".utf8) + [0, 1]
    static let formatVersion: UInt16 = 1
    static let headerSize = 96
    /// Bytes of the header covered by the header checksum (the checksum sits right after).
    static let headerChecksummed = 92
    static let sectionEntrySize = 32
    static let referenceRecordSize = 40
    /// Alignment of every section, so the mapped arrays can be read in place.
    static let sectionAlignment = 16

    enum Section: UInt32, CaseIterable {
        case references = 1
        case directory = 2
        case keyLow = 3
        case values = 4
        case peaks = 5
        case metadata = 6
        /// Optional: written only when a reference has cues, so catalogs without cues stay
        /// readable by builds that predate them.
        case cues = 7

        /// The sections every catalog has.
        static let required: [Section] = [.references, .directory, .keyLow, .values, .peaks, .metadata]
    }

    /// Reference timelines are laid end to end on one global frame axis; a gap keeps a pair
    /// from spanning two references.
    static let referenceGapFrames = 64
    /// Targets per peak a reference record may give (its last field; `CatalogReference.landmarkFanOut`).
    static let landmarkFanOuts = 1...16
    /// What a record's 0 there may stand for (files written before the field was): 3 in every
    /// release, 2 in development builds just before the field.
    static let unrecordedLandmarkFanOuts = [3, 2]
    /// Postings hold a frame in 28 bits (the low 4 bits are the fine anchor frequency).
    static let maximumTimelineFrames = 1 << 28
    static var maximumDuration: Double { Double(maximumTimelineFrames) * FingerprintParameters.hopDuration }

    static func frameCount(for duration: Double) -> Int {
        Int((duration / FingerprintParameters.hopDuration).rounded(.up)) + 1
    }

    static func timelineFrames(of references: [CatalogReference]) -> Int {
        references.reduce(0) { $0 + frameCount(for: $1.signature.duration) + referenceGapFrames }
    }

    /// Directory size: about 8 postings per bucket, between 2⁴ and 2²² buckets.
    static func directoryBits(forEntries count: Int) -> Int {
        var bits = 4
        while bits < 22, (1 << bits) * 8 < count { bits += 1 }
        return bits
    }
}
