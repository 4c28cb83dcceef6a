import EarshotWire

/// What the page receives for one box: plain values, encoded as JSON.
public struct BoxReport: Codable, Sendable, Equatable {
    /// How the dashboard stands with the box.
    public enum Connection: String, Codable, Sendable {
        /// No snapshot yet.
        case connecting
        /// Following its events.
        case connected
        /// It stopped answering (or the events stopped): snapshots are asked for again each second.
        case reconnecting
        /// It refused the client key, or its server key is not the one given.
        case refused
    }

    public struct Programme: Codable, Sendable, Equatable {
        public var title: String
        public var itemID: String
        public var catalog: String
        public var catalogVersion: UInt64
        public var referenceIndex: UInt32
        /// The reference's position (seconds) at `positionAtMs` (the dashboard's clock), moving at
        /// `rate` seconds per second unless `moving` is false (a box not heard now: where it was
        /// when last heard).
        public var position: Double
        public var positionAtMs: Int64
        public var rate: Double
        public var moving: Bool
        /// The reference's length, when its cue schedule was read; nil otherwise.
        public var duration: Double?
        public var confidence: Double
        public var cues: [Cue]
    }

    public struct Cue: Codable, Sendable, Equatable {
        public var id: String
        public var start: Double
        public var end: Double?
        /// upcoming, started, ended, skipped.
        public var status: String
        public var lateness: Double?
        public var owed: Bool
    }

    public struct Capture: Codable, Sendable, Equatable {
        public var source: String
        public var xruns: UInt64
        public var reopens: UInt64
        public var gaps: UInt64
        public var problem: String?
    }

    /// A catalog the box holds, as `Catalogs/List` gave it.
    public struct Catalog: Codable, Sendable, Equatable {
        public var name: String
        public var version: UInt64
        /// active, disabled, loading or failed.
        public var state: String
        public var references: UInt32
        public var hours: Double
        /// Who signed it, when it is signed.
        public var signer: String?
        /// Why it failed, or advice on a catalog that serves (an earlier format).
        public var problem: String?

        public init(_ summary: Earshot_V1_CatalogSummary) {
            name = summary.name
            version = summary.version
            state = switch summary.state {
            case .active, .loaded: "active"  // LOADED: what older daemons call ACTIVE
            case .disabled: "disabled"
            case .loading: "loading"
            case .failed: "failed"
            default: "unknown"
            }
            references = summary.referenceCount
            hours = finite(summary.totalDurationSeconds) / 3600
            signer = summary.signerName.isEmpty ? nil : summary.signerName
            problem = [summary.failure, summary.notice].first { !$0.isEmpty }
        }
    }

    public struct Match: Codable, Sendable, Equatable {
        public var title: String
        public var catalog: String
        public var offset: Double
        public var confidence: Double
    }

    public var name: String
    public var server: String
    public var connection: Connection
    /// Why the box is not followed (refused key, no answer), in words.
    public var problem: String?
    public var state: String?
    public var notServing: String?
    public var programme: Programme?
    public var capture: Capture?
    public var matches: [Match]
    /// The box's catalogs by name; nil until listed (or when the box does not let this key list them).
    public var catalogs: [Catalog]?
    /// The view is the last one known, from `lastHeardAtMs`: the box is not followed now. The
    /// programme's cursor stands where it was then.
    public var stale: Bool
    public var lastHeardAtMs: Int64?
    public var epoch: UInt64
    /// When the daemon published the last event the report reflects (ms since the epoch, by the
    /// box's clock): the benchmark, with box and browser on one machine, measures from it how
    /// long an event takes to reach the screen.
    public var lastEventAtMs: Int64?

    /// The report of a box whose state is `view` (nil before the first snapshot), with the cue
    /// schedule of its programme when known: the last schedule event's, else `schedule` (read
    /// over RPC). `lastHeardAtMs` given: `view` is the last known, as at that moment.
    /// `clockOffsetMs` is how far the box's clock is behind the dashboard's: the programme's
    /// position is given at a time on the dashboard's clock, as the page moves it on from the
    /// report's. Numbers that are not finite (which JSON cannot carry) become 0 or nil.
    public init(name: String, server: String, connection: Connection, problem: String?, view: BoxView?, epoch: UInt64,
                schedule: Earshot_V1_CueSchedule?, catalogs: [Earshot_V1_CatalogSummary]? = nil, lastHeardAtMs: Int64? = nil,
                clockOffsetMs: Int64 = 0) {
        self.name = name
        self.server = server
        self.connection = connection
        self.problem = problem
        self.epoch = epoch
        self.catalogs = catalogs.map { $0.map(Catalog.init).sorted { $0.name < $1.name } }
        stale = lastHeardAtMs != nil && view != nil
        self.lastHeardAtMs = view == nil ? nil : lastHeardAtMs
        matches = view?.matches.reversed().map {
            Match(title: $0.mediaItem.title.isEmpty ? $0.mediaItem.id : $0.mediaItem.title, catalog: $0.catalog,
                  offset: finite($0.matchOffset), confidence: finite($0.confidence))
        } ?? []
        guard let view else { return }
        lastEventAtMs = view.lastEventAtMs
        let schedule = [view.schedule, schedule].compactMap { $0 }.first {
            $0.programme.catalog == view.session.snapshot.currentMatch.catalog
                && $0.programme.referenceIndex == view.session.snapshot.currentMatch.referenceIndex
        }
        let s = view.session.snapshot
        state = switch s.state {
        case .idle: "idle"
        case .prerecording: "prerecording"
        case .matching: "matching"
        default: "unknown"
        }
        notServing = view.session.notServing
        capture = Capture(source: s.capture.source, xruns: s.capture.xruns, reopens: s.capture.reopenAttempts, gaps: s.capture.gaps,
                          problem: s.captureProblem.isEmpty ? nil : s.captureProblem)
        guard s.hasCurrentMatch else { return }
        let m = s.currentMatch
        let sameProgramme = schedule.map { $0.programme.catalog == m.catalog && $0.programme.referenceIndex == m.referenceIndex } ?? false
        let scheduled = (sameProgramme ? schedule?.cues ?? [] : []).sorted { $0.start < $1.start }
        var cues: [Cue] = scheduled.map { cue in
            let mark = view.cueMarks[cue.id]
            let end: Double? = cue.hasEnd ? cue.end : (cue.hasDuration ? cue.start + cue.duration : nil)
            return Cue(id: cue.id, start: finite(cue.start), end: end.map(finite), status: mark?.status.rawValue ?? "upcoming",
                       lateness: mark?.lateness.map(finite), owed: mark?.owed ?? false)
        }
        // An event standing for several cues crossed in one step names the last of them (or the
        // owed one): the cues it stood for, the last crossed and those just before it in the
        // schedule, take its status unless an event of their own said more than "upcoming".
        for crossed in view.crossedTogether {
            let named = scheduled.firstIndex { $0.id == crossed.cue }
            let last = crossed.owed ? scheduled.lastIndex { $0.start <= crossed.position } ?? named : named
            guard let last else { continue }
            for j in max(0, last - crossed.count + 1)...last where (view.cueMarks[scheduled[j].id]?.status ?? .upcoming) == .upcoming {
                cues[j].status = crossed.status.rawValue
            }
        }
        var position = finite(m.predictedCurrentMatchOffset), positionAtMs = s.takenAtUnixMs + clockOffsetMs
        let rate = m.timeSkew.isFinite ? 1 + m.timeSkew : 1
        if stale, let heard = self.lastHeardAtMs {
            // Where it was when last heard, standing still.
            position += Double(max(0, heard - positionAtMs)) / 1000 * rate
            positionAtMs = heard
        }
        programme = Programme(
            title: m.mediaItem.title.isEmpty ? m.mediaItem.id : m.mediaItem.title, itemID: m.mediaItem.id, catalog: m.catalog,
            catalogVersion: m.catalogVersion, referenceIndex: m.referenceIndex, position: position,
            positionAtMs: positionAtMs, rate: rate, moving: !stale,
            duration: sameProgramme ? schedule.map { finite($0.referenceDuration) } : nil, confidence: finite(m.confidence), cues: cues)
    }
}

/// `value`, or 0 where it is NaN or infinite.
private func finite(_ value: Double) -> Double { value.isFinite ? value : 0 }

/// Every box, as the page's one message.
public struct DashboardReport: Codable, Sendable, Equatable {
    public var boxes: [BoxReport]
    /// When the report was made (ms since the epoch), so the page can move cursors from it.
    public var madeAtMs: Int64
    /// Counts up with each report the server makes, so a page keeps the newest whatever the
    /// clocks do.
    public var seq: UInt64 = 0

    public init(boxes: [BoxReport], madeAtMs: Int64) {
        self.boxes = boxes
        self.madeAtMs = madeAtMs
    }
}
