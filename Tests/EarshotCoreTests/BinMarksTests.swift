import EarshotTestSupport
import Testing

@testable import EarshotCore

/// The set of offset bins `CandidateFitter.gather` asks of every hit (`BinMarks`): the same answers
/// as a plain set, over timelines of one summary word and of many, across repeated uses.
struct BinMarksTests {
    @Test(arguments: [1, 63, 64, 4_097, 1_400_000])
    func answersAsASetOfTheMarkedRanges(binCount: Int) {
        var marks = BinMarks(binCount: binCount)
        var random = SeededRandom(seed: UInt64(binCount))
        for use in 0..<4 {
            var expected = Set<Int>()
            // Ranges anywhere: some over the timeline's ends, some overlapping, some wholly off it.
            for _ in 0..<(use == 3 ? 0 : 40) {
                let start = Int(random.next() % UInt64(binCount + 40)) - 20
                let length = Int(random.next() % 80) - 5
                let range = start...(start + max(0, length))
                marks.mark(range)
                for b in range where b >= 0 && b < binCount { expected.insert(b) }
            }
            // Every bin of a small timeline; around each marked one and at random of a large one.
            var probes = binCount <= 4_097 ? Array(-3..<(binCount + 3)) : expected.flatMap { [$0 - 1, $0, $0 + 1] }
            for _ in 0..<20_000 { probes.append(Int(random.next() % UInt64(binCount + 10)) - 5) }
            probes += [-1, 0, binCount - 1, binCount, Int.min / 2, Int.max / 2]
            let wrong = marks.withLookup { near in probes.filter { near.contains($0) != expected.contains($0) } }
            #expect(wrong.isEmpty, "use \(use): bins answered wrongly, e.g. \(wrong.prefix(5))")
            marks.clear()
            // Cleared: nothing of this use is left for the next.
            marks.withLookup { near in
                #expect(!expected.contains { near.contains($0) })
            }
        }
    }

    @Test func anEmptyTimelineHoldsNothing() {
        var marks = BinMarks(binCount: 0)
        marks.mark(0...10)
        marks.withLookup { #expect(!$0.contains(0)) }
        marks.clear()
    }
}
