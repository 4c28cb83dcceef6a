import EarshotTestSupport
import Testing

@testable import EarshotCore

/// Choosing the best offset bins while every bin hit is walked (`BinShortlist`).
struct BinShortlistTests {
    @Test func choosesTheBestApartAndTheSameWhateverTheOrder() {
        var random = SeededRandom(seed: 3)
        var bins: [(score: Int, bin: Int)] = (0..<500).map { _ in (Int(random.next() % 20), Int(random.next() % 100_000)) }
        // Two places that stand out, each with a slightly weaker neighbour that is the same place.
        bins += [(100, 5_000), (99, 5_002), (90, 70_000), (89, 69_999), (80, 70_003)]
        var chosen: [[Int]] = []
        for _ in 0..<3 {
            bins.shuffle(using: &random)
            var shortlist = BinShortlist<Int>(choosing: 4)
            for (score, bin) in bins { shortlist.offer(score, bin: bin) }
            chosen.append(shortlist.chosen())
        }
        #expect(chosen[0].count == 4)
        #expect(Array(chosen[0].prefix(3)) == [5_000, 70_000, 70_003], "best first; within 2 is the same place")
        #expect(chosen[1] == chosen[0] && chosen[2] == chosen[0], "the order bins come in changes nothing")
        // The fourth: the best score of the rest, and of those the earliest bin.
        let rest = bins.filter { b in !chosen[0].prefix(3).contains { abs($0 - b.bin) <= 2 } }
        let best = rest.map(\.score).max()!
        #expect(chosen[0][3] == rest.filter { $0.score == best }.map(\.bin).min())
    }

    @Test func admitsWhatItWouldKeep() {
        var shortlist = BinShortlist<Double>(choosing: 1)
        for bin in 0..<3 { shortlist.offer(Double(bin), bin: bin * 10) }
        #expect(shortlist.admits(0.5, bin: 100), "the weakest kept is 0")
        #expect(!shortlist.admits(0, bin: 100), "a tie goes to the earlier bin")
        #expect(shortlist.admits(0, bin: -1))
        #expect(shortlist.chosen() == [20])
        var none = BinShortlist<Int>(choosing: 0)
        none.offer(5, bin: 1)
        #expect(!none.admits(5, bin: 0))
        #expect(none.chosen().isEmpty)
    }
}
