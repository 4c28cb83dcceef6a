/// The hits of one hypothesis: the query's landmarks under it (a speed change or a pitch shift,
/// `Matcher.hypotheses`), looked up in the catalog, each posting a hit at (query frame, reference
/// frame). Held as a structure of arrays, reused from search to search; a search may widen the
/// one just made (`collect(...beyond:)`), and the room search's hits are set aside while the other
/// hypotheses are searched (`swapHeld`).
final class HitCollector {
    private let catalog: SearchedCatalogs
    /// The query's strongest peaks (`PeakSelection.query`): what its landmarks are made of.
    private var queryPeaks: [Peak] = []
    /// Hit `i` is at `queryFrame[i]` of the query and `referenceFrame[i]` of the catalog's timeline.
    private(set) var queryFrame: [Int32] = []
    private(set) var referenceFrame: [Int32] = []
    /// The hit's landmark (index into `landmarkKey`…) << 4 | the posting's fine anchor bin.
    private(set) var source: [UInt32] = []
    // The landmarks of the hits held, before their postings are read.
    private var landmarkKey: [UInt32] = []
    private var landmarkFrame: [Int32] = []
    private var landmarkQueryBin: [Float] = []
    /// The `Matcher.peakSearchBins` busiest offset bins of the hits held (`PeakSearch`), when the
    /// search that collected them listed them in its own walk of the histogram: the room search
    /// does, so the peak search and `PeakSearch.otherPlaces` do not sort its hits (the most of any
    /// search) a second time. Whatever changes the hits held drops it.
    var listedPlaces: [Int]?
    /// One key's hits before they join the hit arrays: made once, with the collector.
    private let keyFrames = UnsafeMutableBufferPointer<Int32>.allocate(capacity: MappedCatalog.maximumPostingsPerKey)
    private let keySources = UnsafeMutableBufferPointer<UInt32>.allocate(capacity: MappedCatalog.maximumPostingsPerKey)
    /// What `MappedCatalog.warmPostings` read, kept so its reads are not optimised away.
    private var warmth: UInt32 = 0
    /// What the hits and landmarks held were collected for (what `beyond` widens).
    private struct Collection: Equatable {
        var hypothesis: Int
        var anchorStride: Int
        var frameTolerance: Float
    }
    private var lastCollection: Collection?
    /// The room search's hits and landmarks, set aside while the other hypotheses are searched.
    private struct HeldHits {
        var queryFrame: [Int32] = [], referenceFrame: [Int32] = [], source: [UInt32] = []
        var landmarkKey: [UInt32] = [], landmarkFrame: [Int32] = [], landmarkQueryBin: [Float] = []
        var places: [Int]?
    }
    private var held = HeldHits()

    init(catalog: SearchedCatalogs) {
        self.catalog = catalog
    }

    deinit {
        keyFrames.deallocate()
        keySources.deallocate()
    }

    /// Hits held.
    var count: Int { queryFrame.count }

    /// Makes `signature` the query whose landmarks are collected. Another query's hits are never
    /// widened.
    func query(_ signature: Signature) {
        queryPeaks.removeAll(keepingCapacity: true)
        signature.peaks.withUnsafeBufferPointer {
            PeakSelection.select($0, PeakSelection.query, into: &queryPeaks)
        }
        lastCollection = nil
    }

    /// Exchanges the hits and landmarks held with those set aside (no copy: the arrays trade
    /// places). Afterwards no search may widen what is held.
    func swapHeld() {
        swap(&queryFrame, &held.queryFrame)
        swap(&referenceFrame, &held.referenceFrame)
        swap(&source, &held.source)
        swap(&landmarkKey, &held.landmarkKey)
        swap(&landmarkFrame, &held.landmarkFrame)
        swap(&landmarkQueryBin, &held.landmarkQueryBin)
        swap(&listedPlaces, &held.places)
        lastCollection = nil
    }

    /// Holds the given hits as if a search had collected them (hit `i`'s landmark is
    /// `sources[i] >> 4`): for tests of the rankings of offset bins.
    func hold(queryFrames: [Int32], referenceFrames: [Int32], sources: [UInt32]) {
        queryFrame = queryFrames
        referenceFrame = referenceFrames
        source = sources
        listedPlaces = nil
        lastCollection = nil
    }

    /// Collects the hits of hypothesis `h`'s landmarks (every `anchorStride`-th anchor's) whose
    /// offsets lie on `histogram`'s timeline. With `beyond`, the hits already collected (this
    /// hypothesis, all anchors, time probes of that tolerance) are kept and only the landmarks the
    /// wider `frameTolerance` adds are looked up. Keys with more than `postingLimit` postings (at
    /// most `MappedCatalog.maximumPostingsPerKey`) give no hits.
    func collect(hypothesis h: Int, anchorStride: Int, frameTolerance: Float = LandmarkHasher.queryFrameTolerance,
                 beyond inner: Float? = nil, postingLimit: Int = MappedCatalog.maximumPostingsPerKey,
                 within histogram: OffsetHistogram) {
        // The hypothesis's landmarks first, then their postings: the catalog's lookups are
        // independent of each other, so `warmPostings` brings them into cache `warmChunk` keys at
        // a time instead of one cache miss after another (see `MappedCatalog.warmPostings`).
        let extending = inner != nil
        precondition(!extending || lastCollection == Collection(hypothesis: h, anchorStride: anchorStride, frameTolerance: inner!),
                     "a search widens only the one just made")
        lastCollection = Collection(hypothesis: h, anchorStride: anchorStride, frameTolerance: frameTolerance)
        listedPlaces = nil
        var keys = Scratch.take(&landmarkKey, keeping: extending), frames = Scratch.take(&landmarkFrame, keeping: extending)
        var bins = Scratch.take(&landmarkQueryBin, keeping: extending)
        let first = keys.count
        defer {
            landmarkKey = keys
            landmarkFrame = frames
            landmarkQueryBin = bins
        }
        let hypothesis = Matcher.hypotheses[h]
        queryPeaks.withUnsafeBufferPointer { peaks in
            LandmarkHasher.forEachQueryLandmark(peaks, fanOut: LandmarkHasher.queryFanOut,
                                                timeScale: hypothesis.timeScale, pitch: hypothesis.pitch,
                                                frameTolerance: frameTolerance, beyond: inner,
                                                anchorStride: anchorStride) { lm, anchor in
                keys.append(lm.key)
                frames.append(lm.frame)
                bins.append(peaks[anchor].bin)
            }
        }
        let catalog = self.catalog

        // The loop works on locals moved out of the collector (and back after): mutating stored
        // properties from inside closures costs a dynamic exclusivity check per access.
        var queryFrames = Scratch.take(&queryFrame, keeping: extending)
        var referenceFrames = Scratch.take(&referenceFrame, keeping: extending)
        var sources = Scratch.take(&source, keeping: extending)
        defer {
            queryFrame = queryFrames
            referenceFrame = referenceFrames
            source = sources
        }
        var warm: UInt32 = 0
        defer { warmth &+= warm }
        // A key's hits go to scratch first and join the arrays in one append each: an append per
        // hit pays a uniqueness check and a capacity check per array.
        let keyFrames = self.keyFrames, keySources = self.keySources
        let postingLimit = min(max(0, postingLimit), keyFrames.count)
        for l in first..<keys.count {
            guard queryFrames.count < MatchThresholds.maximumHits else { break }
            if (l - first) % MatchThresholds.warmChunk == 0 {
                let end = min(keys.count, l + MatchThresholds.warmChunk)
                warm &+= keys.withUnsafeBufferPointer { catalog.warmPostings(of: UnsafeBufferPointer(rebasing: $0[l..<end])) }
            }
            let frame = frames[l], landmark = UInt32(l) << 4
            var found = 0, overflowed = false
            catalog.forEachPosting(of: keys[l], limit: postingLimit) { value in
                let reference = Int32(truncatingIfNeeded: value >> 4)
                guard histogram.bin(ofOffset: Int(reference) - Int(frame)) != nil else { return }
                guard found < postingLimit else { overflowed = true; return }
                keyFrames[found] = reference
                keySources[found] = landmark | UInt32(truncatingIfNeeded: value) & 15
                found += 1
            }
            // More postings than one catalog lets a key give (several catalogs searched together
            // each give up to the limit): skipped, as one catalog of them all would skip it,
            // rather than kept for the first catalogs only.
            guard found > 0, !overflowed else { continue }
            queryFrames.append(contentsOf: repeatElement(frame, count: found))
            referenceFrames.append(contentsOf: UnsafeBufferPointer(rebasing: keyFrames[0..<found]))
            sources.append(contentsOf: UnsafeBufferPointer(rebasing: keySources[0..<found]))
        }
    }

    /// The query's anchor bin of hit `i`.
    @inline(__always)
    func queryBin(ofHit i: Int) -> Double {
        Double(landmarkQueryBin[Int(source[i] >> 4)])
    }

    /// The reference's anchor bin of hit `i`, to 1/16 bin.
    @inline(__always)
    func referenceBin(ofHit i: Int) -> Double {
        let hit = source[i]
        return Double(LandmarkHasher.anchorBin(key: landmarkKey[Int(hit >> 4)], fineBin: UInt8(hit & 15)))
    }
}
