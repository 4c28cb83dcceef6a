import Testing

@testable import EarshotCore

/// Which speed and pitch hypotheses the matcher searches with all anchors after the coarse stage.
struct HypothesisRankingTests {
    @Test func theBestIsSearchedFromTheCoarseFloorAndTheRunnerUpFromTheVerificationFloor() throws {
        let floor = MatchThresholds.coarseFloor, verification = Matcher.verificationFloor
        try #require(floor < verification - 1, "a runner-up between the two floors exists")
        // A weak best alone: a speed change under noise shows a handful of anchors there.
        func refined(_ scored: [(score: Int, hypothesis: Int)]) -> [String] {
            Matcher.refined(scored).map { "\($0.hypothesis)\($0.weak ? " weak" : "")" }
        }
        #expect(refined([(0, 1), (floor, 7), (floor - 1, 3)]) == ["7 weak"])
        #expect(refined([(floor - 1, 7), (0, 2)]) == [])
        // The runner-up needs as much as a verified candidate does.
        #expect(refined([(floor, 4), (verification - 1, 9)]) == ["9 weak"])
        #expect(refined([(verification, 4), (verification + 3, 9), (2, 5)]) == ["9", "4"])
        // Never more than `refinedHypotheses`, best first, ties to the earlier hypothesis.
        #expect(refined([(20, 6), (20, 3), (20, 11)]) == ["3", "6"])
        #expect(refined([]) == [])
    }
}
