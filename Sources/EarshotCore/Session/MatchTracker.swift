/// One result of a streaming session, as its `results` sequence delivers it.
public struct StreamingResult: Sendable {
    public var result: MatchResult
    /// The same media item of the same reference as the previous match, at the position that
    /// match predicted: a client showing "now playing" can skip it (its offsets are still the
    /// freshest measurement).
    public var isRepeat: Bool
    /// Stream time (seconds of audio heard since the session began) at the end of the matched
    /// window: the moment `predictedCurrentMatchOffset` refers to.
    public var streamTime: Double
    /// The newest audio showed a jump away from what was followed (`JumpDetector`): a seek or a
    /// channel flipped back, not a chance match.
    public var revealsJump: Bool
    /// The newest seconds of audio, matched alone, do not hold this position: the answer rests on
    /// older audio in the window (the programme may have stopped, or be too quiet to hear).
    public var isStale: Bool

    public init(result: MatchResult, isRepeat: Bool, streamTime: Double, revealsJump: Bool = false, isStale: Bool = false) {
        self.result = result
        self.isRepeat = isRepeat
        self.streamTime = streamTime
        self.revealsJump = revealsJump
        self.isStale = isStale
    }
}

/// Turns a stream of match attempts into the results a listener wants: each match (repeats of
/// the current item marked), one `.noMatch` when a match is lost or when nothing matched yet,
/// and every error.
public struct MatchTracker: Sendable {
    /// Consecutive attempts without the current item before it counts as lost: one noisy
    /// window (a loud remark in the room) should not flip the screen.
    public var missesBeforeLost: Int
    /// How far (seconds) a new match may sit from where the current one predicted and still be
    /// the same playback rather than a jump (a seek, a repeat in the programme).
    public var positionTolerance: Double

    private var current: MatchedMediaItem?
    private var currentAt = 0.0
    private var misses = 0
    private var reportedNoMatch = false

    public init(missesBeforeLost: Int = 2, positionTolerance: Double = 0.5) {
        self.missesBeforeLost = missesBeforeLost
        self.positionTolerance = positionTolerance
    }

    /// The item being followed, if any, and the stream time its offsets refer to.
    public var currentMatch: (item: MatchedMediaItem, streamTime: Double)? {
        current.map { ($0, currentAt) }
    }

    /// Takes the result of an attempt whose window ended at `streamTime`; returns what to deliver.
    public mutating func track(_ result: MatchResult, streamTime: Double, revealsJump: Bool = false) -> StreamingResult? {
        switch result {
        case .match(var items):
            // Where playback should be now, if an item is followed.
            func continues(_ m: MatchedMediaItem) -> Bool {
                guard let current else { return false }
                return JumpDetector.agrees(m, with: current, at: Self.predictedOffset(of: current, from: currentAt, to: streamTime),
                                           tolerance: positionTolerance)
            }
            // A repeated section (a chorus, a jingle) matches at every place it occurs, and the
            // result lists them; what was heard before tells which: when the best is the followed
            // reference elsewhere, the items that continue the followed playback go first. (Another
            // reference on top is new audio, a channel change: its order stands.)
            let top = items[0]
            if !continues(top), items.contains(where: continues) {
                func first(_ m: MatchedMediaItem) -> Bool { m.hasSameReference(as: top) && continues(m) }
                items = items.filter(first) + items.filter { !first($0) }
            }
            // The same playback showing another media item (the next segment of a reference) is news.
            let isRepeat = continues(items[0]) && items[0].mediaItem.id == current?.mediaItem.id
            current = items[0]
            currentAt = streamTime
            misses = 0
            reportedNoMatch = false
            return StreamingResult(result: .match(items), isRepeat: isRepeat, streamTime: streamTime, revealsJump: revealsJump)
        case .noMatch:
            if current != nil {
                misses += 1
                guard misses >= missesBeforeLost else { return nil }
                current = nil
            } else if reportedNoMatch {
                return nil
            }
            reportedNoMatch = true
            return StreamingResult(result: .noMatch, isRepeat: false, streamTime: streamTime)
        case .error:
            return StreamingResult(result: result, isRepeat: false, streamTime: streamTime)
        }
    }

    /// Forgets the current item (the stream restarted).
    public mutating func reset() {
        current = nil
        misses = 0
        reportedNoMatch = false
    }

    /// Where `item` (matched with its window ending at `from`) is at stream time `to`: the
    /// reference advances by the measured speed.
    public static func predictedOffset(of item: MatchedMediaItem, from: Double, to: Double) -> Double {
        item.predictedOffset(after: to - from)
    }
}
