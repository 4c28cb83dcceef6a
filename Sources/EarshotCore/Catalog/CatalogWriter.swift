import FoundationEssentials

/// Encodes a `CustomCatalog` into the `.earcat` image: hashes every reference, sorts the
/// postings by key and lays out the sections for reading in place.
enum CatalogWriter {
    /// The image in the current format; `version` 1 is for tests and benchmarks of catalogs that
    /// earlier releases wrote. `directoryBits` overrides a version 2 directory's size (for tests
    /// of sizes a small catalog does not reach; it must still hold the timeline's frames).
    static func encode(_ catalog: CustomCatalog, version: UInt16 = CatalogLayout.formatVersion,
                       directoryBits: Int? = nil) throws(EarshotError) -> [UInt8] {
        precondition(CatalogLayout.readableVersions.contains(version), "no writer for catalog format \(version)")
        // 1. Postings: (key, frame, fine) for every reference landmark, on the global timeline,
        // packed so that sorting them orders them as the index holds them.
        let timeline = CatalogLayout.timelineFrames(of: catalog.references)
        guard timeline <= CatalogLayout.maximumTimelineFrames(version: version) else {
            let hours = Double(CatalogLayout.maximumTimelineFrames(version: version)) * FingerprintParameters.hopDuration / 3600
            throw .catalogInvalid("catalog exceeds \(Int(hours)) hours of reference audio")
        }
        var postings = [UInt64]()
        postings.reserveCapacity(catalog.references.reduce(0) { $0 + $1.signature.peaks.count * $1.landmarkFanOut })
        var records = ByteWriter()
        var peaks = ByteWriter()
        var metadata = ByteWriter()
        var start = 0
        for reference in catalog.references {
            let frames = CatalogLayout.frameCount(for: reference.signature.duration)
            reference.signature.peaks.withUnsafeBufferPointer { p in
                LandmarkHasher.forEachLandmark(p, fanOut: reference.landmarkFanOut) { lm, _ in
                    let frame = UInt64(start + max(0, min(frames - 1, Int(lm.frame))))
                    postings.append(version == 1 ? UInt64(lm.key) << 32 | frame << 4 | UInt64(lm.fineBin)
                        : UInt64(CatalogLayout.PostingRecord.indexKey(lm.key)) << 36 | frame << 4 | UInt64(lm.fineBin))
                }
            }
            let json = try StoredMediaItems.encode(reference.mediaItems)
            records.append(UInt32(start))
            records.append(UInt32(frames))
            records.append(reference.signature.duration)
            records.append(UInt64(peaks.bytes.count))
            records.append(UInt32(PeakCoding.recordCount(reference.signature.peaks)))
            records.append(UInt32(metadata.bytes.count))
            records.append(UInt32(json.count))
            records.append(UInt32(reference.landmarkFanOut))
            PeakCoding.encode(reference.signature.peaks, into: &peaks)
            metadata.append(bytes: json)
            start += frames + CatalogLayout.referenceGapFrames
        }
        precondition(start == timeline, "references laid out as the timeline counts them")
        postings.sort()

        // 2. The index: a directory over the top bits of the key, and the postings of each bucket.
        let (bits, index) = version == 1 ? version1Index(postings)
            : index(postings, bits: directoryBits ?? CatalogLayout.directoryBits(forEntries: postings.count, timelineFrames: timeline))

        // 3. Header, section table, sections.
        var sections: [(CatalogLayout.Section, [UInt8])] = [(.references, records.bytes), (.directory, index.directory)]
        sections += index.postings
        sections += [(.peaks, peaks.bytes), (.metadata, metadata.bytes)]
        // Cues only when there are some: a catalog without them has no cues section at all.
        if catalog.references.contains(where: { !$0.cues.isEmpty }) {
            do { sections.append((.cues, [UInt8](try JSONCoding.encoder.encode(catalog.references.map(\.cues))))) } catch {
                throw .internalError("could not encode cues: \(error)")
            }
        }
        var out = ByteWriter()
        out.append(bytes: CatalogLayout.magic)
        out.append(version)
        out.append(UInt16(CatalogLayout.headerSize))
        out.append(UInt16(sections.count))
        out.append(UInt16(0))
        out.append(UInt32(FingerprintParameters.sampleRate))
        out.append(UInt16(FingerprintParameters.fftSize))
        out.append(UInt16(FingerprintParameters.hopSize))
        out.append(UInt32(bits))
        out.append(UInt32(catalog.references.count))
        out.append(UInt64(postings.count))
        out.append(UInt64(start))
        out.append(catalog.minimumQuerySignatureDuration)
        out.append(catalog.maximumQuerySignatureDuration)
        while out.bytes.count < CatalogLayout.headerChecksummed { out.append(UInt8(0)) }
        out.append(UInt32(0))  // header checksum, patched below
        var offset = CatalogLayout.headerSize + sections.count * CatalogLayout.sectionEntrySize
        for (kind, bytes) in sections {
            offset = (offset + CatalogLayout.sectionAlignment - 1) / CatalogLayout.sectionAlignment * CatalogLayout.sectionAlignment
            out.append(kind.rawValue)
            out.append(UInt32(0))
            out.append(UInt64(offset))
            out.append(UInt64(bytes.count))
            out.append(CRC32.checksum(bytes))
            out.append(UInt32(0))
            offset += bytes.count
        }
        let headerCRC = out.bytes.withUnsafeBytes { raw in
            CRC32.checksum(UnsafeRawBufferPointer(rebasing: raw[CatalogLayout.headerSize...]),
                           continuing: CRC32.checksum(UnsafeRawBufferPointer(rebasing: raw[0..<CatalogLayout.headerChecksummed])))
        }
        out.patch(headerCRC, at: CatalogLayout.headerChecksummed)
        out.bytes.reserveCapacity(offset)
        for (_, bytes) in sections {
            out.align(to: CatalogLayout.sectionAlignment)
            out.append(bytes: bytes)
        }
        return out.bytes
    }

    private typealias Index = (directory: [UInt8], postings: [(CatalogLayout.Section, [UInt8])])

    /// Version 2: 21-bit index keys (`PostingRecord.indexKey`), sorted, each posting one record.
    private static func index(_ postings: [UInt64], bits: Int) -> (Int, Index) {
        precondition((4...Int(CatalogLayout.PostingRecord.keyBits)).contains(bits), "directory bits out of range")
        let residualBits = UInt64(CatalogLayout.PostingRecord.keyBits) - UInt64(bits)
        let frameBits = UInt64(CatalogLayout.PostingRecord.frameBits(directoryBits: UInt32(bits)))
        var directory = [UInt32](repeating: 0, count: (1 << bits) + 1)
        var records = [UInt8](repeating: 0, count: postings.count * CatalogLayout.PostingRecord.size)
        for (i, p) in postings.enumerated() {
            let key = p >> 36, value = p & (1 << 36 - 1)
            directory[Int(key >> residualBits) + 1] += 1
            let record = (key & (1 << residualBits - 1)) << (frameBits + 4) | value
            for b in 0..<CatalogLayout.PostingRecord.size {
                records[i * CatalogLayout.PostingRecord.size + b] = UInt8(truncatingIfNeeded: record >> (8 * UInt64(b)))
            }
        }
        return (bits, (cumulative(directory), [(.postings, records)]))
    }

    /// Version 1: mixed 32-bit keys, sorted; their low 16 bits and the values as parallel arrays.
    private static func version1Index(_ postings: [UInt64]) -> (Int, Index) {
        let bits = CatalogLayout.version1DirectoryBits(forEntries: postings.count)
        var directory = [UInt32](repeating: 0, count: (1 << bits) + 1)
        var keyLow = ByteWriter()
        var values = ByteWriter()
        keyLow.bytes.reserveCapacity(postings.count * 2)
        values.bytes.reserveCapacity(postings.count * 4)
        for p in postings {
            let key = UInt32(truncatingIfNeeded: p >> 32)
            directory[Int(key >> (32 - UInt32(bits))) + 1] += 1
            keyLow.append(UInt16(truncatingIfNeeded: key))
            values.append(UInt32(truncatingIfNeeded: p))
        }
        return (bits, (cumulative(directory), [(.keyLow, keyLow.bytes), (.values, values.bytes)]))
    }

    /// Bucket counts (each at its bucket + 1) made into where each bucket starts, as bytes.
    private static func cumulative(_ counts: [UInt32]) -> [UInt8] {
        var directory = counts
        for i in 1..<directory.count { directory[i] += directory[i - 1] }
        var bytes = ByteWriter()
        bytes.bytes.reserveCapacity(directory.count * 4)
        for d in directory { bytes.append(d) }
        return bytes.bytes
    }
}
