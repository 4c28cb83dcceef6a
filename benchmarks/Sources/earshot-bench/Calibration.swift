import EarshotCore
import EarshotTestSupport
import Foundation

/// Audio that is not in the catalog, of the kinds a box by the TV hears: what confidence is
/// calibrated against.
struct NegativeKind {
    var key: String
    var name: String
    /// The condition applied to the excerpt (`Condition.all` key).
    var condition: String
    var source: Source

    enum Source {
        /// Held-out music (files not in the catalog, and synthetic music).
        case heldOut
        /// People talking alone (`SpeechPool`).
        case speech
        /// Noise alone, of each colour.
        case noise
    }

    static let all: [NegativeKind] = [
        NegativeKind(key: "neg-speech", name: "people talking alone", condition: "clean10", source: .speech),
        NegativeKind(key: "neg-noise", name: "noise alone (white, pink, brown)", condition: "clean10", source: .noise),
        NegativeKind(key: "neg-tv", name: "other music + people talking (0 dB)", condition: "speech0", source: .heldOut),
        NegativeKind(key: "neg-room", name: "other music in a room (RT60 0.3 s + noise 5 dB)", condition: "room0.3", source: .heldOut),
    ]

    /// The recordings excerpts are cut from.
    func recordings(_ p: Prepared, maker: QueryMaker, seed: UInt64) throws -> [Recording] {
        switch source {
        case .heldOut:
            return (p.heldOutFiles + p.syntheticNegatives).map { p.recordings[$0] }
        case .speech:
            guard let speech = maker.speech?.conversation else { return [] }
            return [Recording(id: "speech", samples: speech, inCatalog: false)]
        case .noise:
            let count = Int(60 * FingerprintParameters.sampleRate)
            let hush = Degradations.addWhiteNoise([Float](repeating: 0.001, count: count), snr: 0, seed: seed)
            return [Degradations.NoiseColor.white, .pink, .brown].enumerated().map { k, color in
                Recording(id: "noise-\(color)", samples: Degradations.addNoise(hush, color: color, snr: -60, seed: seed &+ UInt64(k)),
                          inCatalog: false)
            }
        }
    }
}

/// How far chance alignments reach, by catalog size: the best candidate's inliers for every
/// negative, against the share of right matches a minimum keeps.
enum Calibration {
    /// The evidence floor used to see chance (a match needs `Matcher.requiredInliers`).
    static let floor = 4
    /// Minimums the table shows.
    static let minimums = 5...16

    struct Row {
        var minimumInliers: Int
        /// Negatives whose best candidate reaches the minimum by chance, per negative kind: (count, negatives).
        var chance: [String: (Int, Int)]
        var allChance: (Int, Int)
        /// Negatives whose best candidate reaches the minimum on audio a catalog file shares
        /// (peak overlap ≥ 8 %: the same loop, sample or passage; `PeakOverlap`). Such negatives
        /// are left out of `chance` at every minimum.
        var shared: Int
        /// Positives right (item and offset) with at least the minimum, over all positives.
        var recall: (Int, Int)
    }

    /// One row per minimum, from a probe's candidates. `signatures`: the catalog files' own.
    static func rows(_ queries: [ScaleQuery], _ probe: ProbeResult, signatures: [String: Signature]) -> [Row] {
        // Shared audio is judged once per negative: the clean excerpt against the reference found.
        var isShared: [Int: Bool] = [:]
        for (i, q) in queries.enumerated() where !q.positive && i < probe.candidates.count {
            let c = probe.candidates[i]
            guard let id = c.id, let reference = signatures[id] else { isShared[i] = false; continue }
            isShared[i] = PeakOverlap.fraction(query: q.cleanPeaks, reference: reference.peaks, offset: c.offset)
                >= PeakOverlap.similarMaterialThreshold
        }
        return minimums.map { k in
            var chance: [String: (Int, Int)] = [:]
            var all = (0, 0), recall = (0, 0), shared = 0
            for (i, q) in queries.enumerated() where i < probe.candidates.count {
                let c = probe.candidates[i]
                if q.positive {
                    recall.1 += 1
                    if c.inliers >= k, c.id == q.id, abs(c.offset - q.start) <= RecognitionBenchmark.offsetTolerance { recall.0 += 1 }
                    continue
                }
                let reached = c.inliers >= k
                if isShared[i] == true {
                    if reached { shared += 1 }
                    continue
                }
                let hit = reached ? 1 : 0
                chance[q.kind, default: (0, 0)].0 += hit
                chance[q.kind, default: (0, 0)].1 += 1
                all.0 += hit
                all.1 += 1
            }
            return Row(minimumInliers: k, chance: chance, allChance: all, shared: shared, recall: recall)
        }
    }

    /// What the product's own search (`Matcher.match`: the minimum, or fewer anchors confirmed by
    /// the reference's peaks) answers for the same queries, from a probe's shipped results.
    static func shipped(_ queries: [ScaleQuery], _ probe: ProbeResult, signatures: [String: Signature]) -> Row {
        var chance: [String: (Int, Int)] = [:]
        var all = (0, 0), recall = (0, 0), shared = 0
        for (i, q) in queries.enumerated() where i < probe.queries.count {
            let r = probe.queries[i]
            if q.positive {
                recall.1 += 1
                if r.id == q.id, abs(r.offset - q.start) <= RecognitionBenchmark.offsetTolerance { recall.0 += 1 }
                continue
            }
            if let id = r.id, let reference = signatures[id],
               PeakOverlap.fraction(query: q.cleanPeaks, reference: reference.peaks, offset: r.offset) >= PeakOverlap.similarMaterialThreshold {
                shared += 1
                continue
            }
            let hit = r.id == nil ? 0 : 1
            chance[q.kind, default: (0, 0)].0 += hit
            chance[q.kind, default: (0, 0)].1 += 1
            all.0 += hit
            all.1 += 1
        }
        return Row(minimumInliers: 0, chance: chance, allChance: all, shared: shared, recall: recall)
    }

    /// The Markdown table of both catalogs' rows, side by side.
    static func table(small: [Row], large: [Row], requiredSmall: Int, requiredLarge: Int, hours: (Double, Double)) -> String {
        var s = String(format: "| aligned anchors at least | confidence (%.1f h / %.0f h catalog) | chance matches, %.1f h | chance matches, %.0f h | recall, %.1f h | recall, %.0f h |\n",
                       hours.0, hours.1, hours.0, hours.1, hours.0, hours.1)
        s += "|---|---|---|---|---|---|\n"
        for (a, b) in zip(small, large) {
            let k = a.minimumInliers
            func confidence(_ required: Int) -> String {
                k < required ? "(below the minimum)" : Fmt.f(Matcher.confidence(inliers: k, required: required), 2)
            }
            var label = "\(k)"
            if k == requiredSmall { label += " — shipped, \(Fmt.f(hours.0, 1)) h" }
            if k == requiredLarge { label += " — shipped, \(Fmt.f(hours.1, 0)) h" }
            s += "| \(label) | \(confidence(requiredSmall)) / \(confidence(requiredLarge)) "
                + "| \(Fmt.pct(a.allChance.0, a.allChance.1)) (\(a.allChance.0)/\(a.allChance.1)) "
                + "| \(Fmt.pct(b.allChance.0, b.allChance.1)) (\(b.allChance.0)/\(b.allChance.1)) "
                + "| \(Fmt.pct(a.recall.0, a.recall.1)) | \(Fmt.pct(b.recall.0, b.recall.1)) |\n"
        }
        return s
    }
}
