import Testing

@testable import EarshotCore

struct MatchTrackerTests {
    private func item(reference: Int, current: Double, timeSkew: Double = 0) -> MatchResult {
        .match([MatchedMediaItem(
            mediaItem: MediaItem(id: "r\(reference)"), matchOffset: current - 12, predictedCurrentMatchOffset: current,
            frequencySkew: timeSkew, timeSkew: timeSkew, confidence: 0.9, referenceIndex: reference)])
    }

    @Test func followsPlaybackAndMarksRepeats() {
        var tracker = MatchTracker()
        let first = tracker.track(item(reference: 1, current: 30), streamTime: 100)
        #expect(first?.isRepeat == false)
        // One second later at +4 % speed the reference moved 1.04 s.
        var fast = MatchTracker()
        _ = fast.track(item(reference: 1, current: 30, timeSkew: 0.04), streamTime: 100)
        let second = fast.track(item(reference: 1, current: 31.04, timeSkew: 0.04), streamTime: 101)
        #expect(second?.isRepeat == true)
        // Same reference, consistent position: a repeat.
        let repeated = tracker.track(item(reference: 1, current: 31.02), streamTime: 101)
        #expect(repeated?.isRepeat == true)
        // Same reference, a jump (seek): new.
        let jump = tracker.track(item(reference: 1, current: 80), streamTime: 102)
        #expect(jump?.isRepeat == false)
        // Another reference: new.
        let other = tracker.track(item(reference: 2, current: 5), streamTime: 103)
        #expect(other?.isRepeat == false)
    }

    /// A reference holding several media items by time range (a show's segments): playback that
    /// crosses into the next item's range is news, although it continues the same reference.
    @Test func theNextMediaItemOfAReferenceIsNotARepeat() {
        func segment(_ id: String, _ current: Double) -> MatchResult {
            .match([MatchedMediaItem(mediaItem: MediaItem(id: id), matchOffset: current - 12, predictedCurrentMatchOffset: current,
                                     frequencySkew: 0, timeSkew: 0, confidence: 0.9, referenceIndex: 1)])
        }
        var tracker = MatchTracker()
        #expect(tracker.track(segment("q1", 9), streamTime: 100)?.isRepeat == false)
        #expect(tracker.track(segment("q1", 10), streamTime: 101)?.isRepeat == true)
        #expect(tracker.track(segment("q2", 11), streamTime: 102)?.isRepeat == false)
        #expect(tracker.track(segment("q2", 12), streamTime: 103)?.isRepeat == true)
    }

    /// A repeated section matches at each place it occurs: the tracker puts first the position
    /// that continues what it followed, whichever the matcher ranked first.
    @Test func repeatedSectionResolvedByWhatWasHeardBefore() {
        var tracker = MatchTracker()
        _ = tracker.track(item(reference: 1, current: 30), streamTime: 100)
        guard case .match(let elsewhere) = item(reference: 1, current: 75), case .match(let here) = item(reference: 1, current: 32.01)
        else { Issue.record("fixture"); return }
        let delivered = tracker.track(.match(elsewhere + here), streamTime: 102)
        #expect(delivered?.result.mediaItems.map(\.predictedCurrentMatchOffset) == [32.01, 75])
        #expect(delivered?.isRepeat == true)
        // Nothing followed yet: the matcher's order stands.
        var fresh = MatchTracker()
        let first = fresh.track(.match(elsewhere + here), streamTime: 102)
        #expect(first?.result.mediaItems.first?.predictedCurrentMatchOffset == 75)
    }

    /// Another reference on top is new audio (a channel change), not a repeat: the followed
    /// reference, still in the window, does not jump ahead of it.
    @Test func anotherReferenceOnTopKeepsItsPlace() {
        var tracker = MatchTracker()
        _ = tracker.track(item(reference: 1, current: 30), streamTime: 100)
        guard case .match(let other) = item(reference: 2, current: 8), case .match(let followed) = item(reference: 1, current: 32)
        else { Issue.record("fixture"); return }
        let delivered = tracker.track(.match(other + followed), streamTime: 102)
        #expect(delivered?.result.mediaItems.map(\.referenceIndex) == [2, 1])
        #expect(delivered?.isRepeat == false)
    }

    @Test func reportsLossOnceAfterConsecutiveMisses() {
        var tracker = MatchTracker(missesBeforeLost: 2)
        _ = tracker.track(item(reference: 1, current: 30), streamTime: 100)
        #expect(tracker.track(.noMatch, streamTime: 101) == nil)  // one miss is tolerated
        #expect(tracker.currentMatch != nil)
        let lost = tracker.track(.noMatch, streamTime: 102)
        guard case .noMatch = lost?.result else { Issue.record("expected noMatch"); return }
        #expect(tracker.currentMatch == nil)
        #expect(tracker.track(.noMatch, streamTime: 103) == nil)  // said once
    }

    @Test func firstNoMatchIsReportedAndErrorsAlways() {
        var tracker = MatchTracker()
        #expect(tracker.track(.noMatch, streamTime: 1) != nil)
        #expect(tracker.track(.noMatch, streamTime: 2) == nil)
        #expect(tracker.track(.error(.matchAttemptFailed("x")), streamTime: 3) != nil)
        #expect(tracker.track(.error(.matchAttemptFailed("x")), streamTime: 4) != nil)
    }

    @Test func predictedOffsetAdvancesWithMeasuredSpeed() {
        let i = MatchedMediaItem(mediaItem: MediaItem(id: "a"), matchOffset: 0, predictedCurrentMatchOffset: 10,
                                 frequencySkew: 0.04, timeSkew: 0.04, confidence: 1, referenceIndex: 0)
        #expect(abs(MatchTracker.predictedOffset(of: i, from: 5, to: 65) - 72.4) < 1e-9)
    }
}
