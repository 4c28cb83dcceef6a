/// A media item found by a match, with where and how the query matched (`SHMatchedMediaItem`).
public struct MatchedMediaItem: Sendable, Equatable {
    public var mediaItem: MediaItem
    /// Position in the reference (seconds) that matches the start of the query; negative when the
    /// query begins with audio that precedes the reference.
    public var matchOffset: Double
    /// Position in the reference that matches "now": the end of the query, moved on by wall-clock
    /// time in live sessions, scaled by the measured speed.
    public var predictedCurrentMatchOffset: Double
    /// Measured pitch change of the query against the reference: 0.04 means 100 Hz became 104 Hz.
    public var frequencySkew: Double
    /// Measured playback-rate change: 0.04 means the query runs 4 % faster than the reference.
    public var timeSkew: Double
    /// 0…1; audio not in the catalog scores low.
    public var confidence: Double
    /// Index of the matched reference in its catalog.
    public var referenceIndex: Int
    /// The catalog the item comes from, and which version of it ("" and 0 when the matcher was
    /// given one catalog without a name).
    public var catalogName: String
    public var catalogVersion: Int
    /// Seconds of audio in the matched reference: predictions stop at its end (playback that
    /// went on past it is playing something else).
    public var referenceDuration: Double

    public init(mediaItem: MediaItem, matchOffset: Double, predictedCurrentMatchOffset: Double, frequencySkew: Double,
                timeSkew: Double, confidence: Double, referenceIndex: Int, catalogName: String = "", catalogVersion: Int = 0,
                referenceDuration: Double = .infinity) {
        self.referenceDuration = referenceDuration
        self.catalogName = catalogName
        self.catalogVersion = catalogVersion
        self.mediaItem = mediaItem
        self.matchOffset = matchOffset
        self.predictedCurrentMatchOffset = predictedCurrentMatchOffset
        self.frequencySkew = frequencySkew
        self.timeSkew = timeSkew
        self.confidence = confidence
        self.referenceIndex = referenceIndex
    }

    /// Whether `other` comes from the same reference of the same catalog (it may be another
    /// place in it, or another media item of it).
    public func hasSameReference(as other: MatchedMediaItem) -> Bool {
        referenceIndex == other.referenceIndex && catalogName == other.catalogName
    }

    /// Where this item's audio is `elapsed` seconds (of stream or of clock) after the moment
    /// `predictedCurrentMatchOffset` refers to, never past the reference's end.
    public func predictedOffset(after elapsed: Double) -> Double {
        min(Self.offset(predictedCurrentMatchOffset, timeSkew: timeSkew, after: elapsed), referenceDuration)
    }

    /// The one offset prediction of Earshot, for core items and wire messages alike: the
    /// reference advances at the measured speed, `1 + timeSkew` reference seconds per second.
    public static func offset(_ offset: Double, timeSkew: Double, after elapsed: Double) -> Double {
        offset + elapsed * (1 + timeSkew)
    }
}

/// The outcome of one match attempt (`SHSession.Result`).
public enum MatchResult: Sendable {
    /// Matched items, best first.
    case match([MatchedMediaItem])
    /// The query matched nothing in the catalog.
    case noMatch
    /// The attempt could not be made.
    case error(EarshotError)

    public var mediaItems: [MatchedMediaItem] {
        if case .match(let items) = self { return items }
        return []
    }
}
