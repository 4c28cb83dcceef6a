import Foundation

/// Finds which references of a catalog a query signature comes from, where, and at what speed
/// (`SHSession.match`).
///
/// 1. The query's strongest peaks are mapped into reference coordinates under a speed hypothesis
///    and hashed; each hash's postings vote for an offset bin (reference frame − query frame).
/// 2. The busiest bins become candidates; each candidate's hits are fitted with a line (query time
///    → reference time): its inliers are the evidence, its slope the speed, its intercept the
///    offset; the ratio of query to reference anchor frequencies gives the frequency skew.
/// 3. Hypotheses are searched in stages: unchanged speed first (most audio), stopping there on a
///    clear match; otherwise every hypothesis with a third of the anchors, then the best ones fully.
///
/// A matcher owns reusable scratch space: one instance serves one thread at a time.
public final class Matcher {
    public let catalog: MappedCatalog

    /// Speed hypotheses: 0.94…1.06 in 1 % steps covers PAL speed-up (4.1 %) and slow-downs.
    public static let speedHypotheses: [Float] = (0...12).map { 0.94 + 0.01 * Float($0) }
    static let unchangedSpeed = 6
    /// Fewest aligned query anchors that make a match. Chance alignments (same tempo, same
    /// instruments) reuse a few anchors many times; a real match aligns many different ones.
    public static let minimumInliers = 8
    /// Inliers that end the search at unchanged speed: chance never gets near.
    public static let decisiveInliers = 24

    /// How far `referenceCandidates` searches.
    public enum SearchDepth: Sendable {
        /// Unchanged speed only (stage 1): what a clear match needs.
        case unchangedSpeed
        /// Every stage, unless stage 1 is decisive.
        case full
        /// Stages 2 and 3, after a stage 1 whose candidates are given.
        case beyond([Candidate])
    }
    /// Candidates verified per hypothesis, and hypotheses searched fully after the coarse stage.
    static let candidatesPerHypothesis = 4
    static let refinedHypotheses = 2
    /// Anchor subsampling in the coarse stage.
    static let coarseAnchorStride = 3
    /// How far (bins) an inlier's anchor may sit from where the measured pitch ratio puts it:
    /// the fine position is stored to 1/16 bin and peaks jitter by about a tenth of a bin.
    static let binTolerance = 0.3
    /// Stop collecting after this many hits (a pathological catalog must not stall a query).
    static let maximumHits = 1 << 20

    /// A reference-level match before media-item rules are applied.
    public struct Candidate: Sendable {
        public var referenceIndex: Int
        /// Reference seconds at the query's start.
        public var offset: Double
        /// Reference seconds per query second.
        public var timeScale: Double
        /// Query frequency / reference frequency.
        public var pitchRatio: Double
        /// Query anchors (distinct frames) whose hits lie on the match line: the evidence.
        public var inliers: Int
        public var confidence: Double
    }

    private var histogram: OffsetHistogram
    private var queryPeaks: [Peak] = []
    // Hits of the hypothesis being searched (structure of arrays).
    private var hitQueryFrame: [Int32] = []
    private var hitReferenceFrame: [Int32] = []
    private var hitQueryBin: [Float] = []
    private var hitReferenceBin: [Float] = []
    private var xs: [Double] = []
    private var ys: [Double] = []
    private var ratios: [Double] = []
    private var candidateHits: [Int] = []
    private var inlierFrames: [Int32] = []
    private var lineFit = LineFit()

    public init(catalog: MappedCatalog) {
        self.catalog = catalog
        let margin = Int(2 * catalog.maximumQuerySignatureDuration / FingerprintParameters.hopDuration) + 64
        histogram = OffsetHistogram(timelineFrames: catalog.timelineFrames, margin: margin)
    }

    /// How far (seconds) a query may pass its catalog's duration limits: window lengths are
    /// whole analysis hops.
    public static let durationSlack = 0.05

    /// One match attempt. Refuses signatures outside the catalog's query duration limits.
    public func match(_ signature: Signature) -> MatchResult {
        let slack = Self.durationSlack
        guard signature.duration + slack >= catalog.minimumQuerySignatureDuration else {
            return .error(.signatureDurationInvalid(String(
                format: "query is %.2f s; this catalog needs at least %.2f s", signature.duration,
                catalog.minimumQuerySignatureDuration)))
        }
        guard signature.duration <= catalog.maximumQuerySignatureDuration + slack else {
            return .error(.signatureDurationInvalid(String(
                format: "query is %.2f s; this catalog accepts at most %.2f s", signature.duration,
                catalog.maximumQuerySignatureDuration)))
        }
        return result(of: referenceCandidates(signature), for: signature)
    }

    /// The media items of `candidates` (from `referenceCandidates` of `signature`), best first.
    public func result(of candidates: [Candidate], for signature: Signature) -> MatchResult {
        var results: [MatchedMediaItem] = []
        for c in candidates {
            let items = catalog.mediaItems(ofReference: c.referenceIndex)
            let current = MatchedMediaItem.offset(c.offset, timeSkew: c.timeScale - 1, after: signature.duration)
            // Time-ranged items follow the current position, as a second screen shows what is on now.
            guard let selected = MediaItemSelection.select(items, offset: current, frequencySkew: c.pitchRatio - 1,
                                                           basicItemID: "reference-\(c.referenceIndex)")
            else { continue }
            for item in selected {
                results.append(MatchedMediaItem(
                    mediaItem: item, matchOffset: c.offset, predictedCurrentMatchOffset: current,
                    frequencySkew: c.pitchRatio - 1, timeSkew: c.timeScale - 1, confidence: c.confidence,
                    referenceIndex: c.referenceIndex))
            }
        }
        return results.isEmpty ? .noMatch : .match(results)
    }

    /// Every reference the query matches, best first. Several catalogs searched together
    /// (`CatalogSetMatcher`) search each at `.unchangedSpeed` first, and go on (`.beyond`) only
    /// when none of them was decisive, as one matcher does over one catalog.
    public func referenceCandidates(_ signature: Signature, depth: SearchDepth = .full) -> [Candidate] {
        queryPeaks.removeAll(keepingCapacity: true)
        signature.peaks.withUnsafeBufferPointer {
            PeakSelection.strongest($0, perSecond: PeakSelection.queryPeaksPerSecond, into: &queryPeaks)
        }
        let queryFrames = signature.duration / FingerprintParameters.hopDuration

        // Stage 1: unchanged speed, all anchors.
        var found: [Candidate]
        var goOn: Bool
        switch depth {
        case .unchangedSpeed:
            found = search(hypothesis: Self.unchangedSpeed, anchorStride: 1, queryFrames: queryFrames)
            goOn = false
        case .full:
            found = search(hypothesis: Self.unchangedSpeed, anchorStride: 1, queryFrames: queryFrames)
            goOn = (found.map(\.inliers).max() ?? 0) < Self.decisiveInliers
        case .beyond(let stageOne):
            found = stageOne
            goOn = true
        }
        if goOn {
            // Stage 2: every other hypothesis with a subsample of anchors; keep the most promising.
            var scored: [(score: Int, hypothesis: Int)] = []
            for h in Self.speedHypotheses.indices where h != Self.unchangedSpeed {
                let coarse = search(hypothesis: h, anchorStride: Self.coarseAnchorStride, queryFrames: queryFrames)
                scored.append((coarse.map(\.inliers).max() ?? 0, h))
            }
            scored.sort { $0.score > $1.score }
            // Stage 3: the best hypotheses with all anchors.
            for (score, h) in scored.prefix(Self.refinedHypotheses) where score > 0 {
                found += search(hypothesis: h, anchorStride: 1, queryFrames: queryFrames)
            }
        }
        // One result per reference: its best-supported position and hypothesis. (Repetitive
        // music can match a repeat of the same section too; the weaker position is dropped.)
        var merged: [Candidate] = []
        for c in found.sorted(by: { $0.inliers > $1.inliers }) where !merged.contains(where: { $0.referenceIndex == c.referenceIndex }) {
            merged.append(c)
        }
        // Keep references close to the best (a shared intro matches several equally well).
        if let best = merged.first?.inliers { merged.removeAll { $0.inliers * 4 < best } }
        return merged
    }

    /// The match the query makes with `reference` at `offset` (reference seconds at the query's
    /// start), searched under the speed hypothesis nearest `speed`; nil when the query does not
    /// support that position. A session following a programme asks this when the best-first
    /// search answers elsewhere: music repeats itself, and a repeat of the same section can
    /// outscore the position playback is really at.
    /// `minimumInliers` may be lower than a match needs: the question is not "which reference"
    /// but "does this position hold too", which chance rarely answers yes at one given offset.
    public func candidate(_ signature: Signature, reference: Int, offset: Double, speed: Double,
                          minimumInliers: Int = Matcher.minimumInliers) -> Candidate? {
        guard reference >= 0, reference < catalog.referenceCount, offset.isFinite, speed.isFinite else { return nil }
        queryPeaks.removeAll(keepingCapacity: true)
        signature.peaks.withUnsafeBufferPointer {
            PeakSelection.strongest($0, perSecond: PeakSelection.queryPeaksPerSecond, into: &queryPeaks)
        }
        let hypotheses = Self.speedHypotheses
        guard let h = hypotheses.indices.min(by: { abs(Double(hypotheses[$0]) - speed) < abs(Double(hypotheses[$1]) - speed) })
        else { return nil }
        collectHits(hypothesis: h, anchorStride: 1)
        histogram.drain { _, _ in }
        let hop = FingerprintParameters.hopDuration
        let frames = Double(catalog.references[reference].startFrame) + offset / hop
        guard frames.magnitude < Double(Int32.max), let bin = histogram.bin(ofOffset: Int(frames.rounded())),
              let c = verify(hypothesis: h, bin: bin, queryFrames: signature.duration / hop, minimumInliers: minimumInliers),
              c.referenceIndex == reference, abs(c.offset - offset) <= 0.5
        else { return nil }
        return c
    }

    /// Collects the hits of one hypothesis and verifies its busiest offset bins.
    private func search(hypothesis h: Int, anchorStride: Int, queryFrames: Double) -> [Candidate] {
        collectHits(hypothesis: h, anchorStride: anchorStride)
        var best: [(score: Int, bin: Int)] = []
        histogram.drain { bin, score in
            guard score >= Self.minimumInliers / 2 else { return }
            if best.count < Self.candidatesPerHypothesis * 3 {
                best.append((score, bin))
            } else if let weakest = best.indices.min(by: { best[$0].score < best[$1].score }), best[weakest].score < score {
                best[weakest] = (score, bin)
            }
        }
        best.sort { $0.score > $1.score }
        var chosen: [Int] = []
        var candidates: [Candidate] = []
        for (_, bin) in best where chosen.count < Self.candidatesPerHypothesis {
            if chosen.contains(where: { abs($0 - bin) <= 2 }) { continue }
            chosen.append(bin)
            if let c = verify(hypothesis: h, bin: bin, queryFrames: queryFrames) { candidates.append(c) }
        }
        return candidates
    }

    private func collectHits(hypothesis h: Int, anchorStride: Int) {
        // The loop works on locals moved out of the matcher (and back after): mutating stored
        // properties from inside closures costs a dynamic exclusivity check per access.
        var queryFrames = Self.take(&hitQueryFrame), referenceFrames = Self.take(&hitReferenceFrame)
        var queryBins = Self.take(&hitQueryBin), referenceBins = Self.take(&hitReferenceBin)
        var histogram = OffsetHistogram.empty
        swap(&histogram, &self.histogram)
        defer {
            hitQueryFrame = queryFrames
            hitReferenceFrame = referenceFrames
            hitQueryBin = queryBins
            hitReferenceBin = referenceBins
            swap(&histogram, &self.histogram)
        }
        let catalog = self.catalog
        queryPeaks.withUnsafeBufferPointer { peaks in
            LandmarkHasher.forEachQueryLandmark(peaks, fanOut: LandmarkHasher.queryFanOut,
                                                speed: Self.speedHypotheses[h]) { lm, anchor in
                guard anchor % anchorStride == 0, queryFrames.count < Self.maximumHits else { return }
                let queryBin = peaks[anchor].bin
                catalog.forEachPosting(of: lm.key) { value in
                    let frame = Int32(value >> 4)
                    guard let bin = histogram.bin(ofOffset: Int(frame) - Int(lm.frame)) else { return }
                    histogram.add(bin: bin)
                    queryFrames.append(lm.frame)
                    referenceFrames.append(frame)
                    queryBins.append(queryBin)
                    referenceBins.append(LandmarkHasher.anchorBin(key: lm.key, fineBin: UInt8(value & 15)))
                }
            }
        }
    }

    /// Moves an array out of a stored property, emptied but keeping its capacity.
    private static func take<T>(_ array: inout [T]) -> [T] {
        var taken: [T] = []
        swap(&taken, &array)
        taken.removeAll(keepingCapacity: true)
        return taken
    }

    private func verify(hypothesis: Int, bin: Int, queryFrames: Double, minimumInliers: Int = Matcher.minimumInliers) -> Candidate? {
        // Hits within a few bins (a tempo drift spreads them over several).
        let binWidth = 1 << OffsetHistogram.binShift
        let drift = Int(0.07 * queryFrames) + 2 * binWidth
        let center = bin * binWidth + binWidth / 2 - histogram.margin
        xs.removeAll(keepingCapacity: true)
        ys.removeAll(keepingCapacity: true)
        candidateHits.removeAll(keepingCapacity: true)
        for i in 0..<hitQueryFrame.count {
            let offset = Int(hitReferenceFrame[i]) - Int(hitQueryFrame[i])
            if abs(offset - center) <= drift {
                xs.append(Double(hitQueryFrame[i]))
                ys.append(Double(hitReferenceFrame[i]))
                candidateHits.append(i)
            }
        }
        guard xs.count >= minimumInliers else { return nil }
        let line = xs.withUnsafeBufferPointer { x in
            ys.withUnsafeBufferPointer { y in
                lineFit.fit(xs: x, ys: y, interceptCenter: Double(center), interceptRadius: Double(drift),
                            slopes: 0.94...1.06)
            }
        }
        guard line.inliers >= minimumInliers else { return nil }

        // Frequency skew: median ratio of query to reference anchor frequency over the inliers.
        ratios.removeAll(keepingCapacity: true)
        for (k, i) in candidateHits.enumerated() where abs(ys[k] - line.intercept - line.slope * xs[k]) <= LineFit.tolerance {
            ratios.append(Double(hitQueryBin[i]) / Double(hitReferenceBin[i]))
        }
        ratios.sort()
        let pitch = ratios[ratios.count / 2]
        // Evidence: inliers whose anchor frequency also agrees with that ratio to a fraction of a
        // bin. The hash only pins the anchor to a bin; chance hits rarely agree finer.
        var aligned = 0
        var midFrame = 0.0
        inlierFrames.removeAll(keepingCapacity: true)
        for (k, i) in candidateHits.enumerated() where abs(ys[k] - line.intercept - line.slope * xs[k]) <= LineFit.tolerance {
            if abs(Double(hitQueryBin[i]) / pitch - Double(hitReferenceBin[i])) <= Self.binTolerance {
                aligned += 1
                midFrame += ys[k]
                inlierFrames.append(hitQueryFrame[i])
            }
        }
        inlierFrames.sort()
        var inliers = 0
        var previousFrame: Int32 = -1
        for f in inlierFrames where f != previousFrame {
            inliers += 1
            previousFrame = f
        }
        guard inliers >= minimumInliers else { return nil }
        midFrame /= Double(aligned)
        guard let reference = catalog.referenceIndex(containing: Int(midFrame)) else { return nil }
        let speed = Double(Self.speedHypotheses[hypothesis])
        let hop = FingerprintParameters.hopDuration
        return Candidate(
            referenceIndex: reference,
            offset: (line.intercept - Double(catalog.references[reference].startFrame)) * hop,
            timeScale: line.slope * speed, pitchRatio: pitch, inliers: inliers,
            confidence: Self.confidence(inliers: inliers))
    }

    /// Maps aligned-anchor counts to 0…1. Chance alignments in a large catalog give a handful of
    /// inliers; a real match of a few seconds gives tens. Calibrated with the benchmark's
    /// negative queries (see benchmarks/RESULTS.md).
    static func confidence(inliers: Int) -> Double {
        max(0, min(1, 1 - exp(-Double(inliers - 4) / 8)))
    }
}
