/// A scheduled event on a reference's timeline, modelled on an HLS interstitial
/// (`EXT-X-DATERANGE`, `CLASS="com.apple.hls.interstitial"`) and `AVPlayerInterstitialEvent`.
///
/// The box never fetches or plays the assets: it carries them for the client, and fires the cue
/// from recognition when the programme's audio crosses `start`. Times are seconds on the
/// reference's timeline. Attributes Earshot does not model (`X-COM-…` client attributes,
/// `SCTE35-*`, anything unknown) are kept as written in `attributes`.
public struct Cue: Sendable, Equatable, Codable {
    /// `X-RESTRICT`.
    public enum Restriction: String, Sendable, Codable, CaseIterable {
        /// No seeking forward or playing faster during the cue.
        case skip = "SKIP"
        /// Seeking across the cue's start owes it to the viewer (even if played before).
        case jump = "JUMP"
    }

    /// `CUE`.
    public enum Flag: String, Sendable, Codable, CaseIterable {
        /// Before the programme, wherever its playback starts.
        case pre = "PRE"
        /// After the programme has played to its end.
        case post = "POST"
        /// Never again in the same programme session, even on replay.
        case once = "ONCE"
    }

    /// `X-SNAP`.
    public enum Snap: String, Sendable, Codable, CaseIterable {
        case out = "OUT"
        case `in` = "IN"
    }

    /// `X-TIMELINE-OCCUPIES`.
    public enum TimelineOccupancy: String, Sendable, Codable, CaseIterable {
        case point = "POINT"
        case range = "RANGE"
    }

    /// `X-TIMELINE-STYLE`.
    public enum TimelineStyle: String, Sendable, Codable, CaseIterable {
        case highlight = "HIGHLIGHT"
        case primary = "PRIMARY"
    }

    /// The class of HLS interstitials, whose cues need exactly one of `assetURI` and `assetList`.
    public static let interstitialClass = "com.apple.hls.interstitial"

    /// Identity within the reference: a cue given again with the same id updates it.
    public var id: String
    /// `CLASS`: what kind of event this is ("" when none is given).
    public var cueClass: String
    /// `START-DATE` mapped onto the reference timeline, in seconds.
    public var start: Double
    /// `DURATION` (or `END-DATE` − `START-DATE`), in seconds.
    public var duration: Double?
    /// `PLANNED-DURATION`: an estimate, used when there is no `duration`.
    public var plannedDuration: Double?
    /// `END-ON-NEXT`: the cue ends where the next cue of the same class starts.
    public var endOnNext: Bool
    /// `X-ASSET-URI`: one asset for the client to show.
    public var assetURI: String?
    /// `X-ASSET-LIST`: a JSON list of assets for the client to fetch.
    public var assetList: String?
    /// `X-RESUME-OFFSET`, seconds after `start`.
    public var resumeOffset: Double?
    /// `X-PLAYOUT-LIMIT`: the cue ends this long after its start at the latest.
    public var playoutLimit: Double?
    public var restrictions: [Restriction]
    public var flags: [Flag]
    public var snap: [Snap]
    /// `X-CONTENT-MAY-VARY` (nil: absent, which means yes).
    public var contentMayVary: Bool?
    public var timelineOccupies: TimelineOccupancy?
    public var timelineStyle: TimelineStyle?
    /// `X-SKIP-CONTROL-OFFSET` and `X-SKIP-CONTROL-DURATION`, seconds.
    public var skipControlOffset: Double?
    public var skipControlDuration: Double?
    /// `X-SKIP-CONTROL-LABEL-ID`.
    public var skipControlLabelID: String?
    /// Every other attribute, by name, as written.
    public var attributes: [String: CueAttribute]

    public init(id: String, cueClass: String = "", start: Double, duration: Double? = nil, plannedDuration: Double? = nil,
                endOnNext: Bool = false, assetURI: String? = nil, assetList: String? = nil, resumeOffset: Double? = nil,
                playoutLimit: Double? = nil, restrictions: [Restriction] = [], flags: [Flag] = [], snap: [Snap] = [],
                contentMayVary: Bool? = nil, timelineOccupies: TimelineOccupancy? = nil, timelineStyle: TimelineStyle? = nil,
                skipControlOffset: Double? = nil, skipControlDuration: Double? = nil, skipControlLabelID: String? = nil,
                attributes: [String: CueAttribute] = [:]) {
        self.id = id
        self.cueClass = cueClass
        self.start = start
        self.duration = duration
        self.plannedDuration = plannedDuration
        self.endOnNext = endOnNext
        self.assetURI = assetURI
        self.assetList = assetList
        self.resumeOffset = resumeOffset
        self.playoutLimit = playoutLimit
        self.restrictions = restrictions
        self.flags = flags
        self.snap = snap
        self.contentMayVary = contentMayVary
        self.timelineOccupies = timelineOccupies
        self.timelineStyle = timelineStyle
        self.skipControlOffset = skipControlOffset
        self.skipControlDuration = skipControlDuration
        self.skipControlLabelID = skipControlLabelID
        self.attributes = attributes
    }

    public var isPre: Bool { flags.contains(.pre) }
    public var isPost: Bool { flags.contains(.post) }
    public var isOnce: Bool { flags.contains(.once) }

    /// How long the cue lasts on the timeline, without `endOnNext`: the playout limit cuts the
    /// duration (or the planned one); nil for a point in time.
    public var length: Double? {
        let natural = duration ?? plannedDuration
        switch (natural, playoutLimit) {
        case (let d?, let l?): return min(d, l)
        case (let d?, nil): return d
        case (nil, let l?): return l
        case (nil, nil): return nil
        }
    }
}

/// An attribute kept as written: its RFC 8216 type and its text (a quoted string without quotes).
public struct CueAttribute: Sendable, Equatable, Hashable, Codable {
    public enum Kind: String, Sendable, Codable {
        case quotedString = "quoted"
        case hexadecimal = "hex"
        case decimal
        case enumerated = "enum"
    }

    public var kind: Kind
    public var value: String

    public init(_ kind: Kind, _ value: String) {
        self.kind = kind
        self.value = value
    }
}

extension Cue {
    /// The id as an error message quotes it: escaped, and its first 64 characters at most.
    var shownID: String {
        if id.isEmpty { return "(no id)" }
        return (id.count > 64 ? String(id.prefix(64)) + "…" : id).escapingControlCharacters
    }
}
