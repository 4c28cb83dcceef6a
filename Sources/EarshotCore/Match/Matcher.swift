import Foundation

/// Finds which references of a catalog a query signature comes from, where, and at what speed
/// (`SHSession.match`).
///
/// 1. Query peaks are mapped into reference coordinates under each speed hypothesis and hashed.
/// 2. Each hash's postings vote for (hypothesis, offset bin); the busiest bins become candidates.
/// 3. Each candidate's hits are fitted with a line (query time → reference time): its inliers are
///    the evidence, its slope the speed, its intercept the offset; the ratio of query to
///    reference anchor frequencies gives the frequency skew.
///
/// A matcher owns reusable scratch space: one instance serves one thread at a time.
public final class Matcher {
    public let catalog: MappedCatalog

    /// Speed hypotheses: 0.94…1.06 in 1 % steps covers PAL speed-up (4.1 %) and slow-downs.
    public static let speedHypotheses: [Float] = (0...12).map { 0.94 + 0.01 * Float($0) }
    /// Width of an offset-histogram bin in frames (256 ms): wide enough that a 5 % tempo drift over
    /// a short query stays within a few bins.
    static let offsetBinShift = 5
    /// Most candidates verified per query.
    static let maximumCandidates = 12
    /// Fewest aligned hits that make a match.
    public static let minimumInliers = 8
    /// How far (bins) an inlier's anchor may sit from where the measured pitch ratio puts it:
    /// the fine position is stored to 1/8 bin and peaks jitter by about a tenth of a bin.
    static let binTolerance = 0.3
    /// Stop collecting after this many hits (a pathological catalog must not stall a query).
    static let maximumHits = 400_000

    private var accumulator = HitAccumulator()
    private var hitHypothesis: [UInt8] = []
    private var hitQueryFrame: [Int32] = []
    private var hitReferenceFrame: [Int32] = []
    private var hitQueryBin: [Float] = []
    private var hitReferenceBin: [Float] = []
    private var xs: [Double] = []
    private var ys: [Double] = []
    private var ratios: [Double] = []
    private var candidateHits: [Int] = []
    private var lineFit = LineFit()

    public init(catalog: MappedCatalog) {
        self.catalog = catalog
        hitHypothesis.reserveCapacity(1 << 14)
        hitQueryFrame.reserveCapacity(1 << 14)
        hitReferenceFrame.reserveCapacity(1 << 14)
        hitQueryBin.reserveCapacity(1 << 14)
        hitReferenceBin.reserveCapacity(1 << 14)
    }

    /// One match attempt. Refuses signatures outside the catalog's query duration limits.
    public func match(_ signature: Signature) -> MatchResult {
        let slack = 0.05
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
        let found = findMatches(signature)
        return found.isEmpty ? .noMatch : .match(found)
    }

    /// A reference-level match before media-item rules are applied.
    public struct Candidate: Sendable {
        public var referenceIndex: Int
        /// Reference seconds at the query's start.
        public var offset: Double
        /// Reference seconds per query second.
        public var timeScale: Double
        /// Query frequency / reference frequency.
        public var pitchRatio: Double
        public var inliers: Int
        public var confidence: Double
    }

    func findMatches(_ signature: Signature) -> [MatchedMediaItem] {
        let candidates = referenceCandidates(signature)
        var results: [MatchedMediaItem] = []
        for c in candidates {
            guard let items = try? catalog.mediaItems(ofReference: c.referenceIndex),
                let selected = MediaItemSelection.select(items, offset: c.offset, frequencySkew: c.pitchRatio - 1,
                                                         basicItemID: "reference-\(c.referenceIndex)")
            else { continue }
            for item in selected {
                results.append(MatchedMediaItem(
                    mediaItem: item, matchOffset: c.offset,
                    predictedCurrentMatchOffset: c.offset + signature.duration * c.timeScale,
                    frequencySkew: c.pitchRatio - 1, timeSkew: c.timeScale - 1, confidence: c.confidence,
                    referenceIndex: c.referenceIndex))
            }
        }
        return results
    }

    /// Every reference the query matches, best first.
    public func referenceCandidates(_ signature: Signature) -> [Candidate] {
        collectHits(signature)
        defer { accumulator.clear() }
        var found: [Candidate] = []
        for (hypothesis, bin) in busiestBins() {
            guard let c = verify(hypothesis: hypothesis, bin: bin, queryFrames: signature.duration / FingerprintParameters.hopDuration)
            else { continue }
            if let i = found.firstIndex(where: { $0.referenceIndex == c.referenceIndex && abs($0.offset - c.offset) < 0.2 }) {
                if c.inliers > found[i].inliers { found[i] = c }
            } else {
                found.append(c)
            }
        }
        found.sort { $0.inliers > $1.inliers }
        // Keep references close to the best (a shared intro matches several equally well).
        if let best = found.first?.inliers { found.removeAll { $0.inliers * 4 < best } }
        return found
    }

    private func collectHits(_ signature: Signature) {
        hitHypothesis.removeAll(keepingCapacity: true)
        hitQueryFrame.removeAll(keepingCapacity: true)
        hitReferenceFrame.removeAll(keepingCapacity: true)
        hitQueryBin.removeAll(keepingCapacity: true)
        hitReferenceBin.removeAll(keepingCapacity: true)
        let catalog = self.catalog
        signature.peaks.withUnsafeBufferPointer { peaks in
            for (h, speed) in Self.speedHypotheses.enumerated() {
                LandmarkHasher.forEachLandmark(peaks, fanOut: LandmarkHasher.queryFanOut, speed: speed) { lm, anchor in
                    guard hitHypothesis.count < Self.maximumHits else { return }
                    catalog.forEachPosting(of: lm.key) { value in
                        let frame = Int32(value >> 4)
                        let offset = Int(frame) - Int(lm.frame)
                        accumulator.add(HitAccumulator.key(hypothesis: h, bin: offset >> Self.offsetBinShift))
                        hitHypothesis.append(UInt8(h))
                        hitQueryFrame.append(lm.frame)
                        hitReferenceFrame.append(frame)
                        hitQueryBin.append(peaks[anchor].bin)
                        hitReferenceBin.append(LandmarkHasher.anchorBin(key: lm.key, fineBin: UInt8(value & 15)))
                    }
                }
            }
        }
    }

    /// The (hypothesis, bin) pairs with the most hits in a 3-bin window, strongest first.
    private func busiestBins() -> [(Int, Int)] {
        var scored: [(score: Int, hypothesis: Int, bin: Int)] = []
        accumulator.forEach { key, count in
            let h = Int(key >> 32), bin = Int(Int32(bitPattern: UInt32(truncatingIfNeeded: key)))
            guard count >= 2 else { return }
            let score = count + accumulator.count(HitAccumulator.key(hypothesis: h, bin: bin - 1))
                + accumulator.count(HitAccumulator.key(hypothesis: h, bin: bin + 1))
            if score >= Self.minimumInliers / 2 { scored.append((score, h, bin)) }
        }
        scored.sort { $0.score > $1.score }
        var chosen: [(Int, Int)] = []
        for s in scored where chosen.count < Self.maximumCandidates {
            if chosen.contains(where: { $0.0 == s.hypothesis && abs($0.1 - s.bin) <= 2 }) { continue }
            chosen.append((s.hypothesis, s.bin))
        }
        return chosen
    }

    private func verify(hypothesis: Int, bin: Int, queryFrames: Double) -> Candidate? {
        // Hits of this hypothesis within a few bins (a tempo drift spreads them over several).
        let drift = Int(0.07 * queryFrames) + 2 * (1 << Self.offsetBinShift)
        let center = (bin << Self.offsetBinShift) + (1 << (Self.offsetBinShift - 1))
        xs.removeAll(keepingCapacity: true)
        ys.removeAll(keepingCapacity: true)
        candidateHits.removeAll(keepingCapacity: true)
        for i in 0..<hitHypothesis.count where Int(hitHypothesis[i]) == hypothesis {
            let offset = Int(hitReferenceFrame[i]) - Int(hitQueryFrame[i])
            if abs(offset - center) <= drift {
                xs.append(Double(hitQueryFrame[i]))
                ys.append(Double(hitReferenceFrame[i]))
                candidateHits.append(i)
            }
        }
        guard xs.count >= Self.minimumInliers else { return nil }
        let line = xs.withUnsafeBufferPointer { x in
            ys.withUnsafeBufferPointer { y in
                lineFit.fit(xs: x, ys: y, interceptCenter: Double(center), interceptRadius: Double(drift),
                            slopes: 0.94...1.06)
            }
        }
        guard line.inliers >= Self.minimumInliers else { return nil }

        // Frequency skew: median ratio of query to reference anchor frequency over the inliers.
        ratios.removeAll(keepingCapacity: true)
        for (k, i) in candidateHits.enumerated() where abs(ys[k] - line.intercept - line.slope * xs[k]) <= LineFit.tolerance {
            ratios.append(Double(hitQueryBin[i]) / Double(hitReferenceBin[i]))
        }
        ratios.sort()
        let pitch = ratios[ratios.count / 2]
        // Evidence: inliers whose anchor frequency also agrees with that ratio to a fraction of a
        // bin. The hash only pins the anchor to a 2-bin bucket; chance hits rarely agree finer.
        var inliers = 0
        var midFrame = 0.0
        for (k, i) in candidateHits.enumerated() where abs(ys[k] - line.intercept - line.slope * xs[k]) <= LineFit.tolerance {
            if abs(Double(hitQueryBin[i]) / pitch - Double(hitReferenceBin[i])) <= Self.binTolerance {
                inliers += 1
                midFrame += ys[k]
            }
        }
        guard inliers >= Self.minimumInliers else { return nil }
        midFrame /= Double(inliers)
        guard let reference = catalog.referenceIndex(containing: Int(midFrame)) else { return nil }
        let speed = Double(Self.speedHypotheses[hypothesis])
        let hop = FingerprintParameters.hopDuration
        return Candidate(
            referenceIndex: reference,
            offset: (line.intercept - Double(catalog.references[reference].startFrame)) * hop,
            timeScale: line.slope * speed, pitchRatio: pitch, inliers: inliers,
            confidence: Self.confidence(inliers: inliers))
    }

    /// Maps aligned-hit counts to 0…1. Chance alignments in a large catalog give a handful of
    /// inliers; a real match of a few seconds gives tens. Calibrated with the benchmark's
    /// negative queries (see benchmarks/RESULTS.md).
    static func confidence(inliers: Int) -> Double {
        max(0, min(1, 1 - exp(-Double(inliers - 4) / 8)))
    }
}
