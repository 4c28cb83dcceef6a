import Testing

@testable import EarshotCore

/// ShazamKit's ordering and filtering rules for time- and skew-ranged media items.
struct MediaItemSelectionTests {
    let global = MediaItem(id: "episode", title: "Episode")
    let early = MediaItem(id: "q1", timeRanges: [10..<20])
    let late = MediaItem(id: "q2", timeRanges: [15..<30])
    let repeated = MediaItem(id: "chorus", timeRanges: [0..<5, 40..<50])

    private func ids(_ items: [MediaItem], at offset: Double, skew: Double = 0) -> [String]? {
        MediaItemSelection.select(items, offset: offset, frequencySkew: skew, basicItemID: "basic")?.map(\.id)
    }

    @Test func rangedItemsOnlyInsideTheirRanges() {
        #expect(ids([global, early, late], at: 12) == ["q1", "episode"])
        #expect(ids([global, early, late], at: 35) == ["episode"])
        #expect(ids([repeated, global], at: 45) == ["chorus", "episode"])
        #expect(ids([repeated], at: 5) == ["basic"])  // half-open: 5 is outside 0..<5
    }

    @Test func mostRecentRangeFirstUnrangedLast() {
        #expect(ids([global, early, late], at: 16) == ["q2", "q1", "episode"])
        #expect(ids([late, global, early], at: 16) == ["q2", "q1", "episode"])
    }

    @Test func basicItemWhenAllRangedItemsAreOutOfScope() {
        #expect(ids([early, late], at: 100) == ["basic"])
    }

    @Test func skewRangesFilterItemsAndWholeReferences() {
        let plain = MediaItem(id: "plain")
        let skewed = MediaItem(id: "skewed", frequencySkewRanges: [0.01..<0.02])
        #expect(ids([plain, skewed], at: 0, skew: 0.015) == ["plain", "skewed"])
        #expect(ids([plain, skewed], at: 0, skew: 0) == ["plain"])
        #expect(ids([skewed], at: 0, skew: 0) == nil)
        #expect(ids([skewed], at: 0, skew: 0.02) == nil)  // upper bound excluded
        #expect(ids([skewed], at: 0, skew: 0.01) == ["skewed"])
    }
}
