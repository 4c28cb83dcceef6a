/// The catalogs one `Matcher` searches, laid end to end on one frame timeline as one catalog's
/// references are: a reference is numbered across all of them, and a posting's frame is moved by
/// its catalog's start. Several catalogs so cost one search, not one each: the query's probes,
/// candidate fits, peak checks and peak search are made once for all of them.
final class SearchedCatalogs {
    let members: [MappedCatalog]
    /// Each member's first frame on the joint timeline.
    private let frameBases: [Int]
    /// Each member's first reference in the joint numbering (and the count at the end).
    private let referenceBases: [Int]
    /// Every reference, its start moved onto the joint timeline.
    let references: [MappedCatalog.Reference]
    private let referenceStarts: [Int]
    /// The member of each reference.
    private let memberOfReference: [Int]
    let timelineFrames: Int
    let entryCount: Int
    let minimumQuerySignatureDuration: Double
    let maximumQuerySignatureDuration: Double

    /// nil when the catalogs cannot share one search: none, different query duration limits, or
    /// a joint timeline longer than the matcher's frames hold (`CatalogLayout.maximumTimelineFrames`).
    init?(_ catalogs: [MappedCatalog]) {
        guard let first = catalogs.first,
              catalogs.allSatisfy({ $0.minimumQuerySignatureDuration == first.minimumQuerySignatureDuration
                  && $0.maximumQuerySignatureDuration == first.maximumQuerySignatureDuration })
        else { return nil }
        var frameBases: [Int] = [], referenceBases: [Int] = [], references: [MappedCatalog.Reference] = []
        var members: [Int] = []
        var frames = 0, entries = 0
        for (m, c) in catalogs.enumerated() {
            frameBases.append(frames)
            referenceBases.append(references.count)
            references += c.references.map { $0.moved(by: frames) }
            members += repeatElement(m, count: c.referenceCount)
            frames += c.timelineFrames
            entries += c.entryCount
        }
        guard frames <= CatalogLayout.maximumTimelineFrames else { return nil }
        referenceBases.append(references.count)
        self.members = catalogs
        self.frameBases = frameBases
        self.referenceBases = referenceBases
        self.references = references
        referenceStarts = references.map(\.startFrame)
        memberOfReference = members
        timelineFrames = frames
        entryCount = entries
        minimumQuerySignatureDuration = first.minimumQuerySignatureDuration
        maximumQuerySignatureDuration = first.maximumQuerySignatureDuration
    }

    /// One catalog alone (its timeline always fits: the catalog's own postings address it).
    convenience init(single catalog: MappedCatalog) {
        self.init([catalog])!
    }

    var referenceCount: Int { references.count }

    /// The member holding reference `r` and its index there.
    @inline(__always)
    func local(_ r: Int) -> (member: Int, reference: Int) {
        let m = memberOfReference[r]
        return (m, r - referenceBases[m])
    }

    /// Reference `reference` of member `member` in the joint numbering.
    func joint(member: Int, reference: Int) -> Int { referenceBases[member] + reference }

    /// `MappedCatalog.warmPostings` in every member.
    func warmPostings(of keys: UnsafeBufferPointer<UInt32>) -> UInt32 {
        var sum: UInt32 = 0
        for c in members { sum &+= c.warmPostings(of: keys) }
        return sum
    }

    /// `MappedCatalog.forEachPosting` in every member, each posting's frame on the joint
    /// timeline. Each member's limit on postings per key holds on its own; `HitCollector` skips a
    /// key whose postings together pass it.
    @inline(__always)
    func forEachPosting(of key: UInt32, limit: Int = MappedCatalog.maximumPostingsPerKey, _ body: (UInt64) -> Void) {
        if members.count == 1 {
            members[0].forEachPosting(of: key, limit: limit, body)
            return
        }
        for m in members.indices {
            let shift = UInt64(frameBases[m]) << 4
            members[m].forEachPosting(of: key, limit: limit) { body($0 &+ shift) }
        }
    }

    /// The reference containing joint `frame`, if any.
    func referenceIndex(containing frame: Int) -> Int? {
        MappedCatalog.referenceIndex(containing: frame, starts: referenceStarts, references: references)
    }

    func mediaItems(ofReference r: Int) -> [MediaItem] {
        let (m, local) = local(r)
        return members[m].mediaItems(ofReference: local)
    }
}

extension MappedCatalog.Reference {
    /// The same reference, `frames` later on a joint timeline.
    func moved(by frames: Int) -> MappedCatalog.Reference {
        MappedCatalog.Reference(startFrame: startFrame + frames, frameCount: frameCount, duration: duration,
                                peaksOffset: peaksOffset, peakRecordCount: peakRecordCount, metadataOffset: metadataOffset,
                                metadataLength: metadataLength, landmarkFanOut: landmarkFanOut)
    }
}
