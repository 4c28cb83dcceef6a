/// A reference recording in a catalog: its signature and the media items it represents.
public struct CatalogReference: Sendable, Equatable {
    public var signature: Signature
    public var mediaItems: [MediaItem]
    /// The events on its timeline, in timeline order.
    public var cues: [Cue]
    /// Targets each of its peaks is paired with in the index: what it was built with
    /// (`LandmarkHasher.referenceFanOut` for a reference added now), kept through edits and
    /// merges so rewriting a catalog keeps every landmark it had.
    public internal(set) var landmarkFanOut: Int

    public init(signature: Signature, mediaItems: [MediaItem], cues: [Cue] = []) {
        self.init(signature: signature, mediaItems: mediaItems, cues: cues, landmarkFanOut: LandmarkHasher.referenceFanOut)
    }

    init(signature: Signature, mediaItems: [MediaItem], cues: [Cue], landmarkFanOut: Int) {
        self.signature = signature
        self.mediaItems = mediaItems
        self.cues = cues
        self.landmarkFanOut = landmarkFanOut
    }
}

/// An editable catalog of reference signatures (`SHCustomCatalog`).
///
/// Build it in memory, then write its `dataRepresentation()` to an `.earcat` file; match against
/// the file through `MappedCatalog`, which reads the index in place. A catalog read back from a
/// file can be edited and written again: it keeps the reference signatures.
public struct CustomCatalog: Sendable, Equatable {
    /// Queries shorter than this carry too little to match and are refused (seconds).
    public var minimumQuerySignatureDuration: Double = 1
    /// Queries longer than this are refused (seconds); also the live prerecording window.
    public var maximumQuerySignatureDuration: Double = 12
    public private(set) var references: [CatalogReference] = []

    public init() {}

    /// Total audio duration of the references, in seconds.
    public var totalDuration: Double { references.reduce(0) { $0 + $1.signature.duration } }

    /// Adds a reference signature representing one or more media items, with the cues on its
    /// timeline.
    public mutating func addReferenceSignature(_ signature: Signature, representing mediaItems: [MediaItem],
                                               cues: [Cue] = []) throws(EarshotError) {
        // A catalog keeps only the strongest peaks, overall and per band: they are the ones that
        // survive a room, and fewer peaks keep the catalog small.
        let kept = try Signature(duration: signature.duration,
                                 peaks: PeakSelection.select(signature.peaks, PeakSelection.reference))
        try add(CatalogReference(signature: kept, mediaItems: mediaItems, cues: cues))
    }

    /// Adds a reference as it is: its peaks (already a catalog's selection) and the index it was
    /// built with, so a merged or edited catalog keeps every landmark its references had.
    mutating func add(_ reference: CatalogReference) throws(EarshotError) {
        guard !reference.mediaItems.isEmpty else { throw .catalogInvalid("a reference signature needs at least one media item") }
        for item in reference.mediaItems { try item.validate() }
        let fanOuts = CatalogLayout.landmarkFanOuts
        guard fanOuts.contains(reference.landmarkFanOut) else {
            throw .catalogInvalid("a reference's index pairs each peak with \(fanOuts.lowerBound)–\(fanOuts.upperBound) others, not \(reference.landmarkFanOut)")
        }
        var reference = reference
        reference.cues = try CueSchedule(reference.cues, referenceDuration: reference.signature.duration).cues
        try CueLimits.checkCatalog([reference.cues.count] + references.map(\.cues.count))
        let frames = CatalogLayout.frameCount(for: reference.signature.duration) + CatalogLayout.referenceGapFrames
        guard CatalogLayout.timelineFrames(of: references) + frames <= CatalogLayout.maximumTimelineFrames else {
            throw .catalogInvalid("catalog would exceed \(Int(CatalogLayout.maximumDuration / 3600)) hours of reference audio")
        }
        references.append(reference)
    }

    /// Adds every reference of `other` (`SHCustomCatalog.add(from:)`). The query limits become
    /// the loosest of the two, so no reference loses the queries it accepted.
    /// All or nothing: if any reference cannot be added, the catalog is left as it was.
    public mutating func merge(_ other: CustomCatalog) throws(EarshotError) {
        var merged = self
        for r in other.references { try merged.add(r) }
        merged.minimumQuerySignatureDuration = min(minimumQuerySignatureDuration, other.minimumQuerySignatureDuration)
        merged.maximumQuerySignatureDuration = max(maximumQuerySignatureDuration, other.maximumQuerySignatureDuration)
        self = merged
    }

    /// Removes the reference at `index`.
    public mutating func removeReference(at index: Int) throws(EarshotError) {
        try checkIndex(index)
        references.remove(at: index)
    }

    /// Replaces the media items of the reference at `index`.
    public mutating func setMediaItems(_ items: [MediaItem], forReferenceAt index: Int) throws(EarshotError) {
        try checkIndex(index)
        guard !items.isEmpty else { throw .catalogInvalid("a reference signature needs at least one media item") }
        for item in items { try item.validate() }
        references[index].mediaItems = items
    }

    /// Replaces the cues of the reference at `index` (checked against its duration; stored in
    /// timeline order). An empty list removes them.
    public mutating func setCues(_ cues: [Cue], forReferenceAt index: Int) throws(EarshotError) {
        try checkIndex(index)
        let checked = try CueSchedule(cues, referenceDuration: references[index].signature.duration).cues
        try CueLimits.checkCatalog(references.indices.map { $0 == index ? checked.count : references[$0].cues.count })
        references[index].cues = checked
    }

    private func checkIndex(_ index: Int) throws(EarshotError) {
        guard references.indices.contains(index) else {
            throw .catalogInvalid("no reference \(index): the catalog has \(references.count) (0–\(references.count - 1))")
        }
    }

    /// Checks the query limits.
    public func validateLimits() throws(EarshotError) {
        guard minimumQuerySignatureDuration.isFinite, maximumQuerySignatureDuration.isFinite,
            minimumQuerySignatureDuration > 0, minimumQuerySignatureDuration <= maximumQuerySignatureDuration,
            maximumQuerySignatureDuration <= CatalogLayout.maximumDuration
        else {
            throw .catalogInvalid(
                "query limits \(minimumQuerySignatureDuration)–\(maximumQuerySignatureDuration) s are not a valid range")
        }
    }

    /// The `.earcat` file contents: header, section table, references, index, peaks, metadata.
    public func dataRepresentation() throws(EarshotError) -> [UInt8] {
        try validateLimits()
        return try CatalogWriter.encode(self)
    }

    /// The `.earcat` file contents in `formatVersion`, 1 as earlier releases wrote it: for
    /// benchmarks and tests of what such catalogs cost and answer (this build reads them, and
    /// `earshot catalog upgrade` rewrites them in the current format).
    @_spi(EarlierFormats)
    public func dataRepresentation(formatVersion: Int) throws(EarshotError) -> [UInt8] {
        guard let version = UInt16(exactly: formatVersion), CatalogLayout.readableVersions.contains(version) else {
            throw .catalogInvalid("no catalog format \(formatVersion)")
        }
        try validateLimits()
        return try CatalogWriter.encode(self, version: version)
    }

    /// Reads an `.earcat` image fully (structure and every checksum) into an editable catalog.
    public init(dataRepresentation data: [UInt8]) throws(EarshotError) {
        let mapped = try MappedCatalog(bytes: data, verification: .full)
        try self.init(mapped)
    }

    /// Rebuilds the editable catalog from a mapped one.
    public init(_ mapped: MappedCatalog) throws(EarshotError) {
        minimumQuerySignatureDuration = mapped.minimumQuerySignatureDuration
        maximumQuerySignatureDuration = mapped.maximumQuerySignatureDuration
        var signatures: [Signature] = []
        for i in 0..<mapped.referenceCount { signatures.append(try mapped.signature(ofReference: i)) }
        let unrecorded = Self.unrecordedFanOut(of: mapped, signatures: signatures)
        for i in 0..<mapped.referenceCount {
            references.append(CatalogReference(signature: signatures[i], mediaItems: mapped.mediaItems(ofReference: i),
                                               cues: mapped.cues(ofReference: i).cues,
                                               landmarkFanOut: mapped.references[i].landmarkFanOut ?? unrecorded))
        }
    }

    /// The fan-out of the references whose records do not say (files written before they did):
    /// one writer indexed them all alike, so the candidate whose landmarks number the file's
    /// entries (less the recorded references') is the one.
    private static func unrecordedFanOut(of mapped: MappedCatalog, signatures: [Signature]) -> Int {
        func landmarks(_ i: Int, _ fanOut: Int) -> Int {
            var n = 0
            signatures[i].peaks.withUnsafeBufferPointer { LandmarkHasher.forEachLandmark($0, fanOut: fanOut) { _, _ in n += 1 } }
            return n
        }
        let candidates = CatalogLayout.unrecordedLandmarkFanOuts
        let unrecorded = mapped.references.indices.filter { mapped.references[$0].landmarkFanOut == nil }
        guard !unrecorded.isEmpty else { return candidates[0] }
        var entries = mapped.entryCount
        for (i, r) in mapped.references.enumerated() { if let f = r.landmarkFanOut { entries -= landmarks(i, f) } }
        let counts = candidates.map { f in unrecorded.reduce(0) { $0 + landmarks($1, f) } }
        return candidates[counts.indices.min { abs(counts[$0] - entries) < abs(counts[$1] - entries) }!]
    }
}
