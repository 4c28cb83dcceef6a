/// Constants of the `.earcat` format (documented in `docs/FORMATS.md`). This build writes version
/// 2 and reads versions 1 and 2; they differ only in how the index is laid out.
enum CatalogLayout {
    static let magic: [UInt8] = Array("EARCAT".utf8) + [0, 1]
    /// The version this build writes.
    static let formatVersion: UInt16 = 2
    /// The versions this build reads.
    static let readableVersions: ClosedRange<UInt16> = 1...2
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
        /// Version 1: the low 16 bits of each posting's key.
        case keyLow = 3
        /// Version 1: each posting's `frame << 4 | fine`.
        case values = 4
        case peaks = 5
        case metadata = 6
        /// Optional: written only when a reference has cues.
        case cues = 7
        /// Version 2: each posting as one 5-byte record (`PostingRecord`).
        case postings = 8

        /// The sections every catalog of `version` has.
        static func required(version: UInt16) -> [Section] {
            version == 1 ? [.references, .directory, .keyLow, .values, .peaks, .metadata]
                : [.references, .directory, .postings, .peaks, .metadata]
        }
        /// The sections a catalog of `version` may have.
        static func allowed(version: UInt16) -> [Section] { required(version: version) + [.cues] }
    }

    /// A version 2 posting: 40 bits, little-endian, in 5 bytes. From the lowest bit: the fine
    /// anchor frequency (4 bits, 1/16 bin), the anchor's frame on the global timeline
    /// (`15 + d` bits, d the directory bits) and the key bits the directory does not give
    /// (`21 − d`). A bucket's postings lie side by side, so a lookup reads one run of bytes.
    enum PostingRecord {
        static let size = 5
        static let keyBits = UInt32(LandmarkHasher.pairKeyBits)
        /// The bits a record gives key, frame and fine position together.
        static let payloadBits: UInt32 = 40
        static func frameBits(directoryBits d: UInt32) -> UInt32 { payloadBits - 4 - (keyBits - d) }
        /// The 21 key bits a version 2 index is ordered by: a bijection of the 21-bit pair hash
        /// (the low bits of `LandmarkHasher.mix`, an odd multiple of it), so the directory's
        /// top bits are well spread.
        @inline(__always)
        static func indexKey(_ key: UInt32) -> UInt32 { key & (1 << keyBits - 1) }
    }

    /// Reference timelines are laid end to end on one global frame axis; a gap keeps a pair
    /// from spanning two references.
    static let referenceGapFrames = 64
    /// Targets per peak a reference record may give (its last field; `CatalogReference.landmarkFanOut`).
    static let landmarkFanOuts = 1...16
    /// What a record's 0 there may stand for (files written before the field was): 3 in every
    /// release, 2 in development builds just before the field.
    static let unrecordedLandmarkFanOuts = [3, 2]
    /// The longest global timeline, in frames (about 2 386 hours): the matcher's frames are 32-bit
    /// signed, with room for offsets and the speed hypotheses.
    static let maximumTimelineFrames = 1 << 30
    /// Version 1 postings hold a frame in 28 bits (the low 4 bits are the fine anchor frequency).
    static let version1MaximumTimelineFrames = 1 << 28
    static var maximumDuration: Double { Double(maximumTimelineFrames) * FingerprintParameters.hopDuration }

    static func maximumTimelineFrames(version: UInt16) -> Int {
        version == 1 ? version1MaximumTimelineFrames : maximumTimelineFrames
    }

    static func frameCount(for duration: Double) -> Int {
        Int((duration / FingerprintParameters.hopDuration).rounded(.up)) + 1
    }

    static func timelineFrames(of references: [CatalogReference]) -> Int {
        references.reduce(0) { $0 + frameCount(for: $1.signature.duration) + referenceGapFrames }
    }

    /// Version 1 directory size: about 8 postings per bucket, between 2⁴ and 2²² buckets.
    static func version1DirectoryBits(forEntries count: Int) -> Int {
        var bits = 4
        while bits < 22, (1 << bits) * 8 < count { bits += 1 }
        return bits
    }

    /// Version 2 directory size: about 8 postings per bucket, between 2⁴ and 2²¹ buckets (at 2²¹
    /// a bucket is one key), and enough that a record's frame field holds the whole timeline.
    static func directoryBits(forEntries count: Int, timelineFrames: Int) -> Int {
        var bits = 4
        while bits < Int(PostingRecord.keyBits), (1 << bits) * 8 < count { bits += 1 }
        while bits < Int(PostingRecord.keyBits), 1 << Int(PostingRecord.frameBits(directoryBits: UInt32(bits))) < timelineFrames {
            bits += 1
        }
        return bits
    }
}
