import EarshotTestSupport
import Testing

@testable import EarshotCore

/// Counting hits per offset bin by sorting (`OffsetHistogram`): the same counts a dense array
/// of counters gives, for timelines whose bins take one, two and three radix passes (the
/// largest is the longest timeline a catalog may have).
struct OffsetHistogramTests {
    @Test(arguments: [2_000, 33_000_000, CatalogLayout.maximumTimelineFrames])
    func countsEveryBinAndItsNeighbours(timelineFrames: Int) {
        var histogram = OffsetHistogram(timelineFrames: timelineFrames, margin: 1_000)
        var random = SeededRandom(seed: UInt64(timelineFrames))
        // Clusters (runs and neighbours) and single hits anywhere, first and last bin included.
        var offsets = [-1_000, timelineFrames + 999]
        for _ in 0..<300 {
            let centre = Int(random.next() % UInt64(timelineFrames)) - 500
            for _ in 0..<Int(random.next() % 6) { offsets.append(centre + Int(random.next() % 100)) }
            offsets.append(Int(random.next() % UInt64(timelineFrames)))
        }
        check(&histogram, offsets, &random)
        // A smaller, different set after it: nothing of the first is counted again.
        check(&histogram, Array(offsets.shuffled(using: &random).prefix(offsets.count / 3)).map { $0 + 40 }, &random)
        var none = 0
        histogram.forEachBin(queryFrames: [], referenceFrames: []) { _, _ in none += 1 }
        #expect(none == 0)
    }

    private func check(_ histogram: inout OffsetHistogram, _ offsets: [Int], _ random: inout SeededRandom) {
        var queryFrames: [Int32] = [], referenceFrames: [Int32] = []
        var expected: [Int: Int] = [:]
        for offset in offsets {
            guard let bin = histogram.bin(ofOffset: offset) else { continue }
            let queryFrame = Int32(random.next() % 900)
            queryFrames.append(queryFrame)
            referenceFrames.append(queryFrame + Int32(offset))
            expected[bin, default: 0] += 1
        }
        #expect(queryFrames.count >= offsets.count - 2, "nearly every offset lies on the timeline")
        var seen: [(Int, Int)] = []
        histogram.forEachBin(queryFrames: queryFrames, referenceFrames: referenceFrames) { seen.append(($0, $1)) }
        #expect(seen.map(\.0) == expected.keys.sorted(), "every bin hit, once, ascending")
        for (bin, score) in seen {
            let want = (expected[bin - 1] ?? 0) + (expected[bin] ?? 0) + (expected[bin + 1] ?? 0)
            #expect(score == want, "bin \(bin)")
        }
    }

    /// Weighted hits: each bin's weight is the sum over it and its neighbours, as its count is,
    /// and the counts are those of the unweighted walk; a walk without weights passes 0. Twice,
    /// the second time with more hits (the scratch grows), for one, two and three radix passes.
    @Test(arguments: [2_000, 33_000_000, CatalogLayout.maximumTimelineFrames])
    func weighsEveryBinAndItsNeighbours(timelineFrames: Int) {
        var histogram = OffsetHistogram(timelineFrames: timelineFrames, margin: 1_000)
        var random = SeededRandom(seed: UInt64(timelineFrames) + 7)
        for clusters in [100, 400] {
            var queryFrames: [Int32] = [], referenceFrames: [Int32] = [], weights: [Float] = []
            var expectedHits: [Int: Int] = [:], expectedWeight: [Int: Double] = [:]
            for _ in 0..<clusters {
                let centre = Int(random.next() % UInt64(timelineFrames)) - 500
                for _ in 0...Int(random.next() % 4) {
                    let offset = centre + Int(random.next() % 96)
                    guard let bin = histogram.bin(ofOffset: offset) else { continue }
                    let queryFrame = Int32(random.next() % 900)
                    let weight = 1 / Float(1 + random.next() % 8)
                    queryFrames.append(queryFrame)
                    referenceFrames.append(queryFrame + Int32(offset))
                    weights.append(weight)
                    expectedHits[bin, default: 0] += 1
                    expectedWeight[bin, default: 0] += Double(weight)
                }
            }
            var seen: [(bin: Int, hits: Int, weight: Double)] = []
            histogram.forEachBin(queryFrames: queryFrames, referenceFrames: referenceFrames, weights: weights) {
                seen.append(($0, $1, $2))
            }
            #expect(seen.map(\.bin) == expectedHits.keys.sorted(), "every bin hit, once, ascending")
            for (bin, hits, weight) in seen {
                let wantHits = (bin - 1...bin + 1).reduce(0) { $0 + (expectedHits[$1] ?? 0) }
                let wantWeight = (bin - 1...bin + 1).reduce(0.0) { $0 + (expectedWeight[$1] ?? 0) }
                #expect(hits == wantHits, "bin \(bin)")
                #expect(abs(weight - wantWeight) < 1e-4, "bin \(bin): \(weight) against \(wantWeight)")
            }
            var unweighted: [(Int, Int, Double)] = []
            histogram.forEachBin(queryFrames: queryFrames, referenceFrames: referenceFrames, weights: nil) {
                unweighted.append(($0, $1, $2))
            }
            #expect(unweighted.map(\.0) == seen.map(\.bin))
            #expect(unweighted.map(\.1) == seen.map(\.hits))
            #expect(unweighted.allSatisfy { $0.2 == 0 })
        }
    }

    @Test func offsetsOutsideTheTimelineHaveNoBin() {
        let histogram = OffsetHistogram(timelineFrames: 10_000, margin: 64)
        #expect(histogram.bin(ofOffset: -64) == 0)
        #expect(histogram.bin(ofOffset: -65) == nil)
        #expect(histogram.bin(ofOffset: 10_063) != nil)
        #expect(histogram.bin(ofOffset: 10_064 + 32) == nil)
    }
}
