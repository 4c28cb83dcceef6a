/// The programme a cue monitor follows: one reference of one catalog. The catalog's version is
/// carried, not compared: a catalog swapped for a new version mid-programme keeps the programme.
public struct CueProgramme: Sendable, Hashable, Codable {
    public var catalogName: String
    public var referenceIndex: Int
    public var catalogVersion: Int

    public init(catalogName: String, referenceIndex: Int, catalogVersion: Int = 0) {
        self.catalogName = catalogName
        self.referenceIndex = referenceIndex
        self.catalogVersion = catalogVersion
    }

    /// Same catalog and reference, whatever the version.
    public func isSame(as other: CueProgramme) -> Bool {
        catalogName == other.catalogName && referenceIndex == other.referenceIndex
    }

    /// "name/reference": the key under which ONCE cues are remembered.
    public var key: String { "\(catalogName)/\(referenceIndex)" }
}

/// What a cue monitor reports (`AVPlayerInterstitialEventMonitor`'s notifications, for a box
/// that listens instead of playing).
public struct CueEvent: Sendable, Equatable {
    public enum Kind: String, Sendable, Codable, CaseIterable {
        /// The programme was identified (again) or its cues changed: `schedule` holds them all.
        case schedule
        /// A cue starts in `CueMonitor.Configuration.lead` seconds: time to preload its asset.
        case upcoming
        /// Playback crossed the cue's start (or landed inside it): it is current.
        case started
        /// The cue's duration (or playout limit, or the next cue of its class) is over, or
        /// playback jumped out of it.
        case ended
        /// Playback jumped over the cue, or crossed it while the programme was not confirmed
        /// and it is too late to start it. `owed` marks the JUMP-restricted cue the viewer is owed.
        case skipped
        /// The programme's position jumped (a seek, a channel flipped back): `from` → `position`.
        case seek
        /// No confirmation for the lost horizon: current cues are over, pending ones held.
        case programmeLost
    }

    public var kind: Kind
    public var programme: CueProgramme
    /// The cue (nil for schedule, seek and programmeLost).
    public var cue: Cue?
    /// The cues of the programme (schedule only).
    public var schedule: CueSchedule?
    /// Stream time (seconds of audio heard) at which the monitor reported it.
    public var time: Double
    /// The programme's position (reference seconds) at `time`.
    public var position: Double
    /// Seconds after its due time it was reported: 0 on time; for a cue joined inside, how long
    /// it had been running.
    public var lateness: Double
    /// For skipped: the JUMP restriction owes this cue to the viewer.
    public var owed: Bool
    /// For skipped: why (one of `SkipReason`'s texts).
    public var reason: String
    /// For seek: the position before the jump.
    public var from: Double?
    /// How many cues this event stands for: more than 1 when cues crossed in one step were
    /// reported together (`CueCoalescing`), `cue` the last of them (or the one owed).
    public var count: Int

    public init(kind: Kind, programme: CueProgramme, cue: Cue? = nil, schedule: CueSchedule? = nil, time: Double,
                position: Double, lateness: Double = 0, owed: Bool = false, from: Double? = nil, count: Int = 1,
                reason: SkipReason? = nil) {
        self.reason = reason?.rawValue ?? ""
        self.kind = kind
        self.programme = programme
        self.cue = cue
        self.schedule = schedule
        self.time = time
        self.position = position
        self.lateness = lateness
        self.owed = owed
        self.from = from
        self.count = count
    }
}

/// Why a cue was SKIPPED, as the event says it.
public enum SkipReason: String, Sendable {
    /// A seek or a channel change went past it.
    case jumpedOver = "jumped over"
    /// Its start was crossed while the programme was not confirmed, later than the late limit.
    case tooLate = "crossed too late to start"
    /// Its whole span was crossed in one step (reported together with others).
    case crossed = "crossed in one step"
    /// A ONCE cue already started in this viewing of the programme (an earlier session).
    case shownOnce = "shown once already in this viewing"
}
