import Testing

@testable import EarshotCore

struct JumpDetectorTests {
    private func item(_ reference: Int, at offset: Double, confidence: Double = 0.95, catalog: String = "c") -> MatchedMediaItem {
        MatchedMediaItem(mediaItem: MediaItem(id: "r\(reference)"), matchOffset: offset - 2.5, predictedCurrentMatchOffset: offset,
                         frequencySkew: 0, timeSkew: 0, confidence: confidence, referenceIndex: reference, catalogName: catalog)
    }

    @Test func aTailThatAgreesOrIsUnsureChangesNothing() {
        var detector = JumpDetector()
        let followed = item(0, at: 100)
        #expect(detector.judge(tail: .match([item(0, at: 100.3)]), following: followed, expectedOffset: 100, streamTime: 50) == nil)
        #expect(detector.judge(tail: .noMatch, following: followed, expectedOffset: 100, streamTime: 50) == nil)
        #expect(detector.judge(tail: .match([item(0, at: 300, confidence: 0.5)]), following: followed, expectedOffset: 100,
                               streamTime: 50) == nil)
        #expect(detector.since == nil)
        #expect(detector.window(available: 12, streamTime: 50) == 12)
    }

    @Test func aConfidentTailElsewhereIsAJumpAndTheWindowRestartsAfterIt() {
        var detector = JumpDetector(tailSeconds: 2.5)
        let followed = item(0, at: 100)
        let revealed = detector.judge(tail: .match([item(0, at: 160)]), following: followed, expectedOffset: 100, streamTime: 50)
        #expect(revealed?.mediaItems.first?.predictedCurrentMatchOffset == 160)
        #expect(detector.since == 47.5)
        // The window grows back from the jump to the whole window, then forgets it.
        #expect(detector.window(available: 12, streamTime: 51) == 3.5)
        #expect(detector.window(available: 12, streamTime: 59) == 11.5)
        #expect(detector.window(available: 12, streamTime: 60) == 12)
        #expect(detector.since == nil)
        // Another reference, or the same index in another catalog, is a jump too.
        #expect(detector.judge(tail: .match([item(1, at: 100)]), following: followed, expectedOffset: 100, streamTime: 70) != nil)
        #expect(detector.judge(tail: .match([item(0, at: 100, catalog: "d")]), following: followed, expectedOffset: 100,
                               streamTime: 71) != nil)
        #expect(detector.checksTail(of: 3.5))
        #expect(!detector.checksTail(of: 3.4))
    }
}
