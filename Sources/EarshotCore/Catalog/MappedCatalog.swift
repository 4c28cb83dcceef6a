import FoundationEssentials

/// A catalog read in place from an `.earcat` image (`SHCustomCatalog` as a session uses it).
///
/// Opening checks the header, the section table, every section's bounds and the checksums of the
/// small sections. `.full` verification, the default and what the daemon and the CLI use for
/// every catalog they open, also checksums the index and peak sections, requires the padding
/// between sections to be zero and the file to end right after its last section. It reads
/// the whole file once, through the mapping, and leaves none of it resident: afterwards the
/// catalog is as lazily mapped as after a `.structure` open (see `checksum`).
/// Lookups read the mapped arrays directly, bounds-checking each bucket: a corrupt index can give
/// wrong postings but never an out-of-bounds read.
public final class MappedCatalog: @unchecked Sendable {
    public enum Verification: Sendable {
        /// Header, section table, bounds and the small sections' checksums: the same cost for any
        /// catalog size. Only for bytes verified in full before (benchmarks of the lazy open,
        /// fuzzing the parser); a catalog that is loaded or installed gets `.full`.
        case structure
        /// Everything above, plus every section's checksum, zero padding and the exact length.
        case full
    }

    /// One reference's place on the global frame axis.
    public struct Reference: Sendable {
        public let startFrame: Int
        public let frameCount: Int
        public let duration: Double
        let peaksOffset: Int
        let peakRecordCount: Int
        let metadataOffset: Int
        let metadataLength: Int
        /// Targets each of its stored peaks is paired with in the index (what an edit re-indexes
        /// it with); nil in files written before references recorded it (`CustomCatalog` tells).
        public let landmarkFanOut: Int?
    }

    private let storage: any CatalogImage
    public let minimumQuerySignatureDuration: Double
    public let maximumQuerySignatureDuration: Double
    public let references: [Reference]
    public let entryCount: Int
    public let timelineFrames: Int
    /// The `.earcat` format version of the file: 1 (earlier releases) or 2 (`currentFormatVersion`).
    public let formatVersion: Int
    /// The format version this build writes.
    public static let currentFormatVersion = Int(CatalogLayout.formatVersion)
    /// A key's bucket is `(key & bucketKeyMask) >> bucketShift`: the top bits of the 32-bit key
    /// in version 1, of its low 21 bits (`PostingRecord.indexKey`) in version 2.
    private let bucketKeyMask: UInt32
    private let bucketShift: UInt32
    /// Posting values at or past this (`frame << 4 | fine` of a frame beyond the timeline) are
    /// not given: only a corrupt file holds them.
    private let valueLimit: UInt64
    private let directory: UnsafePointer<UInt32>
    /// How the postings of a bucket are stored, by format version.
    private enum Postings {
        /// Version 1: parallel arrays of the key's low 16 bits and `frame << 4 | fine`.
        case version1(keyLow: UnsafePointer<UInt16>, values: UnsafePointer<UInt32>)
        /// Version 2: 5-byte records (`CatalogLayout.PostingRecord`), `residualShift` the bit
        /// where the key's residual bits start and `valueMask` the frame and fine bits below it.
        case records(UnsafeRawPointer, residualShift: UInt64, valueMask: UInt64)
    }
    private let postings: Postings
    private let peaksSection: UnsafeRawBufferPointer
    private let referenceStarts: [Int]
    private let mediaItemsByReference: [[MediaItem]]
    private let schedules: [CueSchedule]

    /// The author's signature trailer, if the catalog has one (checked by EarshotStore).
    public let signature: CatalogSignature?
    /// Bytes the signature covers: everything before the trailer (the whole image if unsigned).
    public let signedByteCount: Int

    public var referenceCount: Int { references.count }
    /// Size of the image in bytes.
    public var byteCount: Int { storage.bytes.count }
    /// Bytes of the index: the directory and the postings (what lookups read).
    public let indexByteCount: Int
    /// Total reference audio, in seconds.
    public var totalDuration: Double { references.reduce(0) { $0 + $1.duration } }

    /// Validates an in-memory image (copied once into aligned memory).
    public convenience init(bytes: [UInt8], verification: Verification = .full) throws(EarshotError) {
        try self.init(image: HeapCatalogImage(copying: bytes), verification: verification)
    }

    /// Validates `image` and reads it in place. A `.full` verification looks at `shouldStop`
    /// between megabytes and gives up (with `internalError`) when it returns true, so a daemon
    /// asked to stop while it checks a large catalog stops at once.
    public init(image: any CatalogImage, verification: Verification, shouldStop: () -> Bool = { false }) throws(EarshotError) {
        self.storage = image
        let raw = storage.bytes
        var r = ByteReader(raw) { .catalogInvalid($0) }
        // The magic first: a short foreign file is foreign, not a truncated catalog.
        guard raw.prefix(8).elementsEqual(CatalogLayout.magic.prefix(raw.count)) else {
            throw .catalogInvalid("not an Earshot catalog (bad magic number)")
        }
        guard raw.count >= CatalogLayout.headerSize else {
            throw .catalogInvalid("truncated: \(raw.count) bytes is shorter than the \(CatalogLayout.headerSize)-byte header")
        }
        _ = try r.readBytes(8, "magic")
        let version = try r.read(UInt16.self, "version")
        guard CatalogLayout.readableVersions.contains(version) else {
            let readable = CatalogLayout.readableVersions
            throw .catalogInvalid("unsupported catalog format version \(version) (this build reads \(readable.lowerBound) to \(readable.upperBound))")
        }
        guard try r.read(UInt16.self, "header size") == CatalogLayout.headerSize else {
            throw .catalogInvalid("unexpected header size")
        }
        let sectionCount = Int(try r.read(UInt16.self, "section count"))
        let required = CatalogLayout.Section.required(version: version).count
        let allowed = CatalogLayout.Section.allowed(version: version)
        guard sectionCount == required || sectionCount == allowed.count else {
            throw .catalogInvalid("expected \(required) or \(allowed.count) sections, header says \(sectionCount)")
        }
        _ = try r.read(UInt16.self, "reserved")
        let rate = try r.read(UInt32.self, "sample rate")
        let fft = try r.read(UInt16.self, "FFT size")
        let hop = try r.read(UInt16.self, "hop size")
        guard Double(rate) == FingerprintParameters.sampleRate, Int(fft) == FingerprintParameters.fftSize,
            Int(hop) == FingerprintParameters.hopSize
        else { throw .catalogInvalid("built with other analysis parameters (\(rate) Hz, FFT \(fft), hop \(hop))") }
        let bits = try r.read(UInt32.self, "directory bits")
        let referenceCount = Int(try r.read(UInt32.self, "reference count"))
        let entries = try r.read(UInt64.self, "entry count")
        let timeline = try r.read(UInt64.self, "timeline frames")
        let minQuery = try r.readDouble("minimum query duration")
        let maxQuery = try r.readDouble("maximum query duration")
        let tableEnd = CatalogLayout.headerSize + sectionCount * CatalogLayout.sectionEntrySize
        guard raw.count >= tableEnd else { throw .catalogInvalid("truncated inside the section table") }
        let storedCRC = raw.loadUnaligned(fromByteOffset: CatalogLayout.headerChecksummed, as: UInt32.self).littleEndian
        let crc = CRC32.checksum(UnsafeRawBufferPointer(rebasing: raw[CatalogLayout.headerSize..<tableEnd]),
                                 continuing: CRC32.checksum(UnsafeRawBufferPointer(rebasing: raw[0..<CatalogLayout.headerChecksummed])))
        guard crc == storedCRC else { throw .catalogInvalid("header checksum mismatch (file corrupt)") }
        let bitRange: ClosedRange<UInt32> = version == 1 ? 4...22 : 4...CatalogLayout.PostingRecord.keyBits
        guard bitRange.contains(bits), entries <= UInt64(Int32.max),
            timeline <= UInt64(CatalogLayout.maximumTimelineFrames(version: version)),
            // A version 2 record's frame field holds every frame of the timeline.
            version == 1 || timeline <= 1 << UInt64(CatalogLayout.PostingRecord.frameBits(directoryBits: bits)),
            minQuery.isFinite, maxQuery.isFinite, minQuery > 0, minQuery <= maxQuery,
            // The matcher sizes its offset range by the longest query: at most a catalog's duration.
            maxQuery <= CatalogLayout.maximumDuration
        else { throw .catalogInvalid("header fields out of range") }

        // Section table: bounds, alignment, expected sizes, checksums.
        var sections = [CatalogLayout.Section: UnsafeRawBufferPointer]()
        var covered: [Range<Int>] = [0..<tableEnd]
        // The large sections' checksums, checked last: after every cheap check has passed.
        var deferredChecksums: [(kind: CatalogLayout.Section, range: Range<Int>, crc: UInt32)] = []
        var t = ByteReader(raw, offset: CatalogLayout.headerSize) { .catalogInvalid($0) }
        for _ in 0..<sectionCount {
            let kindRaw = try t.read(UInt32.self, "section kind")
            _ = try t.read(UInt32.self, "section flags")
            let offset = try t.read(UInt64.self, "section offset")
            let length = try t.read(UInt64.self, "section length")
            let sectionCRC = try t.read(UInt32.self, "section checksum")
            _ = try t.read(UInt32.self, "reserved")
            guard let kind = CatalogLayout.Section(rawValue: kindRaw), allowed.contains(kind), sections[kind] == nil else {
                throw .catalogInvalid("unknown or repeated section kind \(kindRaw)")
            }
            guard offset % UInt64(CatalogLayout.sectionAlignment) == 0, offset >= UInt64(tableEnd),
                offset <= UInt64(raw.count), length <= UInt64(raw.count) - offset
            else {
                throw .catalogInvalid("truncated: section \(kind) (\(length) bytes at \(offset)) lies outside the \(raw.count)-byte file")
            }
            let bytes = UnsafeRawBufferPointer(rebasing: raw[Int(offset)..<Int(offset + length)])
            let small: Set<CatalogLayout.Section> = [.references, .metadata, .cues]
            if small.contains(kind) {
                guard CRC32.checksum(bytes) == sectionCRC else {
                    throw .catalogInvalid("checksum mismatch in section \(kind) (file corrupt)")
                }
            } else if verification == .full {
                deferredChecksums.append((kind, Int(offset)..<Int(offset + length), sectionCRC))
            }
            sections[kind] = bytes
            covered.append(Int(offset)..<Int(offset + length))
        }
        if verification == .full {
            // Alignment padding is outside every checksum: it must be zero, and the file must end
            // where its last section does (bytes appended to a catalog are corruption too).
            covered.sort { $0.lowerBound < $1.lowerBound }
            var position = 0
            for range in covered {
                guard range.lowerBound >= position else { throw .catalogInvalid("sections overlap") }
                guard raw[position..<range.lowerBound].allSatisfy({ $0 == 0 }) else {
                    throw .catalogInvalid("unexpected bytes between sections at offset \(position) (file corrupt)")
                }
                position = range.upperBound
            }
            guard position == raw.count || position + CatalogSignature.byteCount == raw.count
                    && CatalogSignature(trailer: UnsafeRawBufferPointer(rebasing: raw[position...])) != nil
            else {
                let extra = raw.count - position
                throw .catalogInvalid("\(extra) unexpected byte\(extra == 1 ? "" : "s") after the last section, which ends at offset \(position) (file corrupt or appended to)")
            }
        }
        // An author's signature may follow the last section (and nothing else may, see above).
        let bodyEnd = covered.map(\.upperBound).max() ?? raw.count
        let trailer = bodyEnd + CatalogSignature.byteCount == raw.count
            ? CatalogSignature(trailer: UnsafeRawBufferPointer(rebasing: raw[bodyEnd...])) : nil
        signature = trailer
        signedByteCount = trailer == nil ? raw.count : bodyEnd
        for kind in CatalogLayout.Section.required(version: version) where sections[kind] == nil {
            throw .catalogInvalid("the \(kind) section is missing")
        }
        let expected: [CatalogLayout.Section: Int] = [
            .references: referenceCount * CatalogLayout.referenceRecordSize,
            .directory: ((1 << Int(bits)) + 1) * 4,
            .keyLow: Int(entries) * 2,
            .values: Int(entries) * 4,
            .postings: Int(entries) * CatalogLayout.PostingRecord.size,
        ]
        for (kind, size) in expected where sections[kind] != nil && sections[kind]!.count != size {
            throw .catalogInvalid("section \(kind) is \(sections[kind]!.count) bytes, expected \(size)")
        }

        // References: sorted, inside the timeline, pointing inside their sections.
        let peaks = sections[.peaks]!, metadata = sections[.metadata]!
        var refs = [Reference]()
        refs.reserveCapacity(referenceCount)
        var rr = ByteReader(sections[.references]!) { .catalogInvalid($0) }
        var previousEnd = 0
        for i in 0..<referenceCount {
            let start = Int(try rr.read(UInt32.self, "reference start"))
            let frames = Int(try rr.read(UInt32.self, "reference frames"))
            let duration = try rr.readDouble("reference duration")
            let peaksOffset = try rr.read(UInt64.self, "peaks offset")
            let peakRecordCount = Int(try rr.read(UInt32.self, "peak record count"))
            let metaOffset = Int(try rr.read(UInt32.self, "metadata offset"))
            let metaLength = Int(try rr.read(UInt32.self, "metadata length"))
            let recordedFanOut = Int(try rr.read(UInt32.self, "landmark fan-out"))
            let fanOut = recordedFanOut == 0 ? nil : recordedFanOut
            guard fanOut.map(CatalogLayout.landmarkFanOuts.contains) ?? true else {
                throw .catalogInvalid("reference \(i) record is inconsistent (landmark fan-out \(recordedFanOut))")
            }
            guard start >= previousEnd, frames > 0, start + frames <= Int(timeline), duration.isFinite, duration > 0,
                peaksOffset <= UInt64(peaks.count),
                UInt64(peakRecordCount) * UInt64(PeakCoding.recordSize) <= UInt64(peaks.count) - peaksOffset,
                metaOffset <= metadata.count, metaLength <= metadata.count - metaOffset
            else { throw .catalogInvalid("reference \(i) record is inconsistent") }
            previousEnd = start + frames
            refs.append(Reference(startFrame: start, frameCount: frames, duration: duration, peaksOffset: Int(peaksOffset),
                                  peakRecordCount: peakRecordCount, metadataOffset: metaOffset, metadataLength: metaLength,
                                  landmarkFanOut: fanOut))
        }
        references = refs
        referenceStarts = refs.map(\.startFrame)
        minimumQuerySignatureDuration = minQuery
        maximumQuerySignatureDuration = maxQuery
        entryCount = Int(entries)
        timelineFrames = Int(timeline)
        formatVersion = Int(version)
        indexByteCount = [.directory, .keyLow, .values, .postings].reduce(0) { $0 + (sections[$1]?.count ?? 0) }
        bucketKeyMask = version == 1 ? UInt32.max : 1 << CatalogLayout.PostingRecord.keyBits - 1
        bucketShift = (version == 1 ? 32 : CatalogLayout.PostingRecord.keyBits) - bits
        valueLimit = timeline << 4
        let directoryBase = sections[.directory]!.baseAddress!
        directory = directoryBase.assumingMemoryBound(to: UInt32.self)
        // An empty section may have no address; its lookups never read it (buckets are empty).
        if version == 1 {
            postings = .version1(keyLow: (sections[.keyLow]!.baseAddress ?? directoryBase).assumingMemoryBound(to: UInt16.self),
                                 values: (sections[.values]!.baseAddress ?? directoryBase).assumingMemoryBound(to: UInt32.self))
        } else {
            let frameBits = UInt64(CatalogLayout.PostingRecord.frameBits(directoryBits: bits))
            postings = .records(sections[.postings]!.baseAddress ?? directoryBase, residualShift: frameBits + 4,
                                valueMask: 1 << (frameBits + 4) - 1)
        }
        peaksSection = peaks
        mediaItemsByReference = try Self.decodeMediaItems(refs, in: metadata)
        schedules = try Self.decodeCues(refs, in: sections[.cues])

        for section in deferredChecksums {
            guard let crc = Self.checksum(storage, section.range, shouldStop: shouldStop) else {
                throw .internalError("verification stopped before the end (asked to stop)")
            }
            guard crc == section.crc else { throw .catalogInvalid("checksum mismatch in section \(section.kind) (file corrupt)") }
        }
    }

    /// Bytes checksummed between two looks at `shouldStop`, and the most of a mapping a
    /// checksum keeps resident at once.
    static let checksumChunk = 1 << 20

    /// The CRC-32 of `image.bytes[range]`, or nil if `shouldStop` returned true first.
    ///
    /// Read a chunk at a time: the next chunk is announced (a mapping is otherwise random-access,
    /// which would read a cold file a page per fault), and each chunk is given back once
    /// checksummed, so checking a whole catalog leaves it as little resident as a lazy open does.
    private static func checksum(_ image: any CatalogImage, _ range: Range<Int>, shouldStop: () -> Bool) -> UInt32? {
        let bytes = image.bytes
        precondition(range.lowerBound >= 0 && range.upperBound <= bytes.count, "range outside the catalog bytes")
        var crc: UInt32 = 0
        var start = range.lowerBound
        image.willRead(start..<min(range.upperBound, start + checksumChunk))
        while start < range.upperBound {
            if shouldStop() { return nil }
            let end = min(range.upperBound, start + checksumChunk)
            if end < range.upperBound { image.willRead(end..<min(range.upperBound, end + checksumChunk)) }
            crc = CRC32.checksum(UnsafeRawBufferPointer(rebasing: bytes[start..<end]), continuing: crc)
            image.doneReading(start..<end)
            start = end
        }
        return crc
    }

    /// Postings one key may have and still be searched: a key that occurs this often (a held
    /// note paired with itself, a drum pattern's pair) says little about where a query comes
    /// from, and would cost a query thousands of hits. Postings per key grow with the catalog:
    /// at 100 hours a limit of 96 dropped a third of right matches' evidence (recall 12–42
    /// points lower in the living-room conditions); 512 keeps nearly all of it, for match time
    /// p99 56 ms instead of 12 (benchmarks/RESULTS.md, "The living room"). A larger catalog wants a
    /// more specific hash, not a higher limit.
    public static let maximumPostingsPerKey = 512
    /// Longest bucket read at all (about 8 postings is usual): a bound on the work a corrupt or
    /// hostile directory can cause.
    public static let maximumBucketLength = 4096

    /// Reads, for every key, its directory entry and then the first posting of its bucket, and
    /// returns a sum of what it read (keep it, so the reads are not left out).
    ///
    /// In a large catalog each of those is a cache miss. `forEachPosting` key after key waits
    /// for them one at a time; here the reads of different keys do not depend on each other, so
    /// the processor has many in flight at once, and the `forEachPosting` calls that follow
    /// find them in cache. No allocation; reads only inside the arrays.
    public func warmPostings(of keys: UnsafeBufferPointer<UInt32>) -> UInt32 {
        var sum: UInt32 = 0
        for key in keys { sum &+= directory[bucket(of: key)] }
        for key in keys {
            let lo = Int(directory[bucket(of: key)])
            guard lo < entryCount else { continue }
            switch postings {
            case .version1(let keyLow, let values): sum &+= UInt32(keyLow[lo]) &+ values[lo]
            case .records(let base, _, _): sum &+= UInt32((base + lo * CatalogLayout.PostingRecord.size).load(as: UInt8.self))
            }
        }
        return sum
    }

    /// The directory bucket of `key` (a `LandmarkHasher` key).
    @inline(__always)
    private func bucket(of key: UInt32) -> Int { Int((key & bucketKeyMask) >> bucketShift) }

    /// Calls `body` with each posting value stored under `key`: `frame << 4 | fineBin`, the frame
    /// inside the timeline. Reads the mapped arrays in place; no allocation. Skips keys with more than
    /// `limit` postings (at most `maximumPostingsPerKey`; a search that only ranks asks fewer). In
    /// a large catalog a bucket holds few keys, so a common key must not take its bucket's other
    /// keys with it: the limit is per key.
    @inline(__always)
    public func forEachPosting(of key: UInt32, limit: Int = maximumPostingsPerKey, _ body: (UInt64) -> Void) {
        let bucket = bucket(of: key)
        let lo = Int(directory[bucket]), hi = Int(directory[bucket + 1])
        // A corrupt directory must not lead outside the arrays.
        guard lo <= hi, hi <= entryCount, hi - lo <= Self.maximumBucketLength else { return }
        switch postings {
        case .version1(let keyLow, let values):
            let low = UInt16(truncatingIfNeeded: key)
            if hi - lo > limit {
                var count = 0
                for i in lo..<hi where keyLow[i] == low { count += 1 }
                guard count <= limit else { return }
            }
            var i = lo
            while i < hi {
                let value = UInt64(values[i])
                if keyLow[i] == low, value < valueLimit { body(value) }
                i += 1
            }
        case .records(let base, let residualShift, let valueMask):
            // At 2²¹ buckets a bucket is one key and every residual is 0.
            let residual = UInt64(key & bucketKeyMask & (1 << bucketShift - 1))
            @inline(__always) func record(_ i: Int) -> UInt64 {
                let p = base + i * CatalogLayout.PostingRecord.size
                return UInt64(p.load(as: UInt8.self)) | UInt64(UInt32(littleEndian: (p + 1).loadUnaligned(as: UInt32.self))) << 8
            }
            if hi - lo > limit {
                var count = 0
                for i in lo..<hi where record(i) >> residualShift == residual { count += 1 }
                guard count <= limit else { return }
            }
            var i = lo
            while i < hi {
                let r = record(i)
                if r >> residualShift == residual, r & valueMask < valueLimit { body(r & valueMask) }
                i += 1
            }
        }
    }

    /// A place in a reference's peak records where a walk may start instead of at the first one.
    /// Peak times are stored as steps from the previous peak, so finding a time means summing
    /// every step before it; a cursor holds that sum for one record.
    public struct PeakCursor: Sendable, Equatable {
        /// The reference whose records it points into (−1 for `.start`).
        public let reference: Int
        /// Index of the record within the reference's records.
        public let record: Int
        /// Time units (`PeakCoding.timeUnitsPerFrame` per frame) of the record before it: every
        /// record from here on is at least this late.
        let units: Int
        /// The first record of any reference.
        public static let start = PeakCursor(reference: -1, record: 0, units: 0)
    }

    /// Records between the cursors of `peakCursors` (about 18 s of a reference's peaks): a walk
    /// from the nearest cursor reads at most this many records it does not use.
    public static let peakCursorStride = 256

    /// Cursors every `peakCursorStride` records of reference `index`, the first at `.start`, made
    /// by one walk over its records. A long reference (an hour-long programme holds about 50 000)
    /// is otherwise walked from its start for every peak check near its end.
    public func peakCursors(ofReference index: Int) -> [PeakCursor] {
        let ref = references[index]
        var cursors = [PeakCursor.start]
        guard let base = peaksSection.baseAddress else { return cursors }
        cursors.reserveCapacity(ref.peakRecordCount / Self.peakCursorStride + 1)
        let records = base + ref.peaksOffset
        var units = 0
        for r in 0..<ref.peakRecordCount {
            if r > 0, r % Self.peakCursorStride == 0 { cursors.append(PeakCursor(reference: index, record: r, units: units)) }
            units += Int(UInt16(littleEndian: (records + r * PeakCoding.recordSize).loadUnaligned(as: UInt16.self)))
        }
        return cursors
    }

    /// The last of `cursors` (from `peakCursors`) from which a walk still meets every peak at or
    /// after `frame`.
    public static func cursor(in cursors: [PeakCursor], before frame: Float) -> PeakCursor {
        // Records before a cursor are at most `units` late. Compared as the walk compares times
        // (as `Float`, whose rounding keeps their order), a cursor strictly before the frame
        // leaves out only peaks the walk would leave out too.
        var lo = 0, hi = cursors.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if Float(cursors[mid].units) / PeakCoding.timeUnitsPerFrame < frame { lo = mid + 1 } else { hi = mid }
        }
        return lo > 0 ? cursors[lo - 1] : .start
    }

    /// Calls `body(time, bin)` for every stored peak of reference `index` whose time (frames from
    /// the reference's start) lies in `frames`, in time order. Reads the peak section in place,
    /// without allocating; peak times are stored as steps, so the walk starts at `cursor` (the
    /// reference's first peak by default; `cursor(in:before:)` finds a later one that still
    /// meets every peak in `frames`).
    public func forEachPeak(ofReference index: Int, in frames: ClosedRange<Float>, from cursor: PeakCursor = .start,
                            _ body: (Float, Float) -> Void) {
        let ref = references[index]
        guard ref.peakRecordCount > 0, let base = peaksSection.baseAddress else { return }
        // Another reference's cursor would give wrong times, or lead outside this one's records.
        let first = cursor.reference == index && cursor.record >= 0 && cursor.record < ref.peakRecordCount ? cursor : .start
        let records = base + ref.peaksOffset
        var units = first.units
        for r in first.record..<ref.peakRecordCount {
            let record = records + r * PeakCoding.recordSize
            units += Int(UInt16(littleEndian: record.loadUnaligned(as: UInt16.self)))
            let bin = UInt16(littleEndian: record.loadUnaligned(fromByteOffset: 2, as: UInt16.self))
            guard bin != PeakCoding.skipValue else { continue }
            let time = Float(units) / PeakCoding.timeUnitsPerFrame
            if time < frames.lowerBound { continue }
            if time > frames.upperBound { return }
            body(time, Float(bin) / PeakCoding.binUnits + PeakCoding.binBase)
        }
    }

    /// The reference containing global `frame`, if any.
    public func referenceIndex(containing frame: Int) -> Int? {
        Self.referenceIndex(containing: frame, starts: referenceStarts, references: references)
    }

    /// The one of `references` (in timeline order, starting at `starts`) containing `frame`.
    static func referenceIndex(containing frame: Int, starts: [Int], references: [Reference]) -> Int? {
        var lo = 0, hi = starts.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if starts[mid] <= frame { lo = mid + 1 } else { hi = mid }
        }
        let i = lo - 1
        guard i >= 0, frame < references[i].startFrame + references[i].frameCount else { return nil }
        return i
    }

    /// The media items of reference `index`, decoded when the catalog was opened.
    public func mediaItems(ofReference index: Int) -> [MediaItem] {
        mediaItemsByReference[index]
    }

    /// The cues on reference `index`'s timeline, decoded and checked when the catalog was opened.
    public func cues(ofReference index: Int) -> CueSchedule {
        schedules[index]
    }

    /// Whether any reference has cues.
    public var hasCues: Bool { schedules.contains { !$0.isEmpty } }

    /// Decodes the optional cues section: one list per reference, each a valid schedule.
    private static func decodeCues(_ references: [Reference], in section: UnsafeRawBufferPointer?) throws(EarshotError) -> [CueSchedule] {
        guard let section else { return references.map { CueSchedule.empty(referenceDuration: $0.duration) } }
        let lists: [[Cue]]
        do { lists = try JSONCoding.decoder.decode([[Cue]].self, from: Data(section)) } catch {
            throw .catalogInvalid("the cues section is not valid: \(error)")
        }
        guard lists.count == references.count else {
            throw .catalogInvalid("the cues section has \(lists.count) lists for \(references.count) references")
        }
        try CueLimits.checkCatalog(lists.lazy.map(\.count))
        var schedules: [CueSchedule] = []
        schedules.reserveCapacity(lists.count)
        for (index, list) in lists.enumerated() {
            do { schedules.append(try CueSchedule(list, referenceDuration: references[index].duration)) } catch {
                throw .catalogInvalid("reference \(index): \(error.message)")
            }
        }
        return schedules
    }

    /// Decodes the media items of every reference, once, when the catalog is opened: a match
    /// then only reads them, and metadata that does not decode is found at load, not at a match.
    private static func decodeMediaItems(_ references: [Reference], in metadata: UnsafeRawBufferPointer) throws(EarshotError) -> [[MediaItem]] {
        var all: [[MediaItem]] = []
        all.reserveCapacity(references.count)
        for (index, ref) in references.enumerated() {
            let bytes = UnsafeRawBufferPointer(rebasing: metadata[ref.metadataOffset..<(ref.metadataOffset + ref.metadataLength)])
            do { all.append(try StoredMediaItems.decode(bytes)) } catch {
                throw .catalogInvalid("media items of reference \(index) are not valid: \(error)")
            }
        }
        return all
    }

    /// The reference signature of reference `index`, decoded from the peaks section.
    public func signature(ofReference index: Int) throws(EarshotError) -> Signature {
        let ref = references[index]
        let end = ref.peaksOffset + ref.peakRecordCount * PeakCoding.recordSize
        let peaks = try PeakCoding.decode(UnsafeRawBufferPointer(rebasing: peaksSection[ref.peaksOffset..<end]),
                                          records: ref.peakRecordCount) { .catalogInvalid("reference \(index): \($0)") }
        do { return try Signature(duration: ref.duration, peaks: peaks) } catch {
            throw .catalogInvalid("reference \(index) signature is not valid: \(error.message)")
        }
    }
}
