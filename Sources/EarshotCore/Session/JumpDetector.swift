/// Finds a jump in the programme (a seek, a channel flipped back) from the newest seconds of
/// audio, while a session follows an item.
///
/// A following session matches its whole window (up to 12 s): after a jump that window still
/// holds mostly audio from before it, so it keeps answering the old position for several
/// seconds. Matching the last `tailSeconds` as well shows the jump as soon as a few seconds of
/// new audio are heard. When the tail matches confidently somewhere the followed item is not,
/// the tail's answer is the attempt's result, and later attempts match only the audio after the
/// jump (growing back to the whole window) so the old audio cannot pull the answer back.
public struct JumpDetector: Sendable {
    /// Seconds of newest audio matched on its own.
    public var tailSeconds: Double
    /// A longer tail, matched when the short one says nothing either way (sparse or noisy audio).
    public var longTailSeconds: Double
    /// Confidence the tail's match needs to overrule the followed item.
    public var minimumConfidence: Double
    /// How far (seconds) the tail may sit from the followed item's predicted position and agree.
    public var positionTolerance: Double
    /// Aligned anchors at the followed position that make the tail a repeat rather than a jump:
    /// a noisy tail may match a repeat of the music better than the place it really is, yet it
    /// still aligns a few anchors there, which chance rarely does at one given offset.
    public static let supportInliers = 4
    /// Stream time where the audio after the last jump begins, until the window holds only such audio.
    public private(set) var since: Double?

    public init(tailSeconds: Double = 2.0, longTailSeconds: Double = 3.0, minimumConfidence: Double = 0.6,
                positionTolerance: Double = 0.5) {
        self.tailSeconds = tailSeconds
        self.longTailSeconds = longTailSeconds
        self.minimumConfidence = minimumConfidence
        self.positionTolerance = positionTolerance
    }

    /// Seconds of the window (holding `available`) to match at stream time `streamTime`.
    public mutating func window(available: Double, streamTime: Double) -> Double {
        guard let since else { return available }
        let after = streamTime - since
        if after >= available {
            self.since = nil
            return available
        }
        return after
    }

    /// Seconds of the window (holding `available`) that follow the last jump, without moving on
    /// (`window` also forgets the jump once the window holds only what followed it).
    public func usable(available: Double, streamTime: Double) -> Double {
        since.map { min(available, max(0, streamTime - $0)) } ?? available
    }

    /// The source said its audio started over at `streamTime` (a file looped or was replaced):
    /// from now on only what follows is matched, as after a jump the audio revealed.
    public mutating func audioStartedOver(at streamTime: Double) {
        since = streamTime
    }

    /// Whether a window of `window` seconds is long enough for its tail to be worth matching apart.
    public func checksTail(of window: Double) -> Bool { window >= tailSeconds + 1 }

    /// The tails to match, in order, for a window of `window` seconds when the catalogs take
    /// queries of `minimumQuery` seconds at least: the short one (a seek shows soonest there),
    /// then the long one, for when the short one says nothing either way (sparse or noisy audio).
    /// Each must leave a second of the window before it.
    public func tails(forWindow window: Double, minimumQuery: Double) -> [Double] {
        let short = max(tailSeconds, minimumQuery), long = max(longTailSeconds, minimumQuery)
        return (long > short ? [short, long] : [short]).filter { $0 + 1 <= window }
    }

    /// Judges the match of the last `tailLength` seconds (default `tailSeconds`) against the
    /// item followed (predicted at `expectedOffset` now); returns the tail's result when it
    /// reveals a jump, and from then on matches only what follows. The caller has made sure the
    /// tail does not hold the followed position as well (a repeat of the same music).
    public mutating func judge(tail: MatchResult, tailLength: Double? = nil, following item: MatchedMediaItem,
                               expectedOffset: Double, streamTime: Double) -> MatchResult? {
        guard case .match(let items) = tail, let top = items.first, top.confidence >= minimumConfidence else { return nil }
        if Self.agrees(top, with: item, at: expectedOffset, tolerance: positionTolerance) { return nil }
        since = streamTime - (tailLength ?? tailSeconds)
        return tail
    }

    /// Whether `candidate` is `item` at `expectedOffset` (within `tolerance` seconds).
    public static func agrees(_ candidate: MatchedMediaItem, with item: MatchedMediaItem, at expectedOffset: Double,
                              tolerance: Double) -> Bool {
        candidate.hasSameReference(as: item) && abs(candidate.predictedCurrentMatchOffset - expectedOffset) <= tolerance
    }

    /// The stream began again (a new window): nothing to remember.
    public mutating func reset() { since = nil }
}
