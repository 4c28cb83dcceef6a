import FoundationEssentials

/// Encodes a `CustomCatalog` into the `.earcat` image: hashes every reference, sorts the
/// postings by key and lays out the sections for reading in place.
enum CatalogWriter {
    static func encode(_ catalog: CustomCatalog) throws(EarshotError) -> [UInt8] {
        // 1. Postings: (key, frame << 4 | fine) for every reference landmark, on the global timeline.
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
                    let frame = max(0, min(frames - 1, Int(lm.frame)))
                    let value = UInt32(start + frame) << 4 | UInt32(lm.fineBin)
                    postings.append(UInt64(lm.key) << 32 | UInt64(value))
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
        guard start <= CatalogLayout.maximumTimelineFrames else {
            throw .catalogInvalid("catalog exceeds \(Int(CatalogLayout.maximumDuration / 3600)) hours of reference audio")
        }
        postings.sort()

        // 2. Directory over the top bits of the key, low 16 key bits and values as parallel arrays.
        let bits = CatalogLayout.directoryBits(forEntries: postings.count)
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
        for i in 1..<directory.count { directory[i] += directory[i - 1] }
        var directoryBytes = ByteWriter()
        for d in directory { directoryBytes.append(d) }

        // 3. Header, section table, sections.
        var sections: [(CatalogLayout.Section, [UInt8])] = [
            (.references, records.bytes), (.directory, directoryBytes.bytes), (.keyLow, keyLow.bytes),
            (.values, values.bytes), (.peaks, peaks.bytes), (.metadata, metadata.bytes),
        ]
        // Cues only when there are some: a catalog without them is exactly what older builds wrote.
        if catalog.references.contains(where: { !$0.cues.isEmpty }) {
            do { sections.append((.cues, [UInt8](try JSONCoding.encoder.encode(catalog.references.map(\.cues))))) } catch {
                throw .internalError("could not encode cues: \(error)")
            }
        }
        var out = ByteWriter()
        out.append(bytes: CatalogLayout.magic)
        out.append(CatalogLayout.formatVersion)
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
}
