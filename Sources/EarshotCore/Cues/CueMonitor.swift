/// Follows the programme the box hears and fires the cues on its timeline: the rules of
/// `AVPlayerInterstitialEventMonitor` for a box whose only clock is the TV's audio.
///
/// A pure state machine without a clock: the runtime gives it recognition's position estimates
/// (`observe`) and the time (`advance`), both in stream seconds (audio heard), and publishes what
/// they return; `nextDeadline` says when to call `advance` next. Rules, in order of precedence:
///
/// - **Confirmation.** An observation within `jumpTolerance` of the track's prediction confirms
///   the track. Cues fire from the track (a line through recent confirmations, so a programme
///   4 % fast fires its cues 4 % sooner), but never more than `holdAfter` seconds past the last
///   confirmation: without one, pending cues wait (nothing fires on a guess). A cue whose start
///   was crossed while waiting starts late when confirmation returns, or is skipped when that is
///   more than `lateLimit` seconds late.
/// - **Jumps.** An observation elsewhere in the programme (or of another programme) is a seek or
///   a channel change when it is decisive (`decisiveConfidence`, or the session saw the newest
///   audio leave the followed position: `revealsJump`) or when the next observation
///   agrees with it; a lone outlier (a repeated chorus) is ignored. Cues jumped over are
///   SKIPPED, the last JUMP-restricted one of them owed; landing inside a cue starts it; a jump
///   back makes the cues after the landing point pending again (ONCE ones excepted).
/// - **Loss.** `lostHorizon` seconds without confirmation: PROGRAMME_LOST, current cues are over,
///   pending ones are held until the programme is heard again.
/// - **Restarts.** When the source says its audio started over (a file looped or was replaced:
///   `audioStartedOver`), nothing is predicted past that moment: cues wait for the next
///   observation, which is believed at once (a seek, or another programme).
/// - **PRE / POST.** PRE cues start when the programme is first recognised within `preWindow`
///   seconds of its beginning; POST cues start when playback reaches the reference's end. Both
///   are moments, never current.
/// - **ONCE.** A ONCE cue starts at most once per programme session (`CueOnceMemory`).
/// - Observations below `minimumConfidence`, and stale ones (the newest audio does not hold
///   them), are ignored.
public struct CueMonitor: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// Seconds (of programme played at its speed) between UPCOMING and STARTED.
        public var lead: Double
        /// Seconds without confirmation after which the programme is lost.
        public var lostHorizon: Double
        /// Seconds past the last confirmation that cues may still fire on the track's prediction.
        public var holdAfter: Double
        /// Seconds after its due time that a cue may still start late; later it is skipped.
        public var lateLimit: Double
        /// Seconds an observation may sit from the prediction and still confirm it.
        public var jumpTolerance: Double
        /// An observation this confident is believed at once when it contradicts the track.
        public var decisiveConfidence: Double
        /// First recognised within this many seconds of the beginning: the PRE cues fire.
        public var preWindow: Double
        /// Wall seconds without hearing a programme that end its session (ONCE cues again).
        public var sessionGap: Double
        /// Observations below this confidence are ignored (the session's threshold).
        public var minimumConfidence: Double
        /// Steps that report crossed cues in one second of stream time after which crossings wait
        /// `pacedStep` seconds between them: a real programme's cues are never this close; a
        /// denser schedule is crossed in steps whose cues are reported together (`CueCoalescing`).
        public var rapidSteps: Int
        public var pacedStep: Double

        public init(lead: Double = 5, lostHorizon: Double = 10, holdAfter: Double = 2.5, lateLimit: Double = 3,
                    jumpTolerance: Double = 0.5, decisiveConfidence: Double = 0.9, preWindow: Double = 15,
                    sessionGap: Double = 1800, minimumConfidence: Double = 0, rapidSteps: Int = 10, pacedStep: Double = 0.1) {
            self.lead = lead
            self.lostHorizon = lostHorizon
            self.holdAfter = holdAfter
            self.lateLimit = lateLimit
            self.jumpTolerance = jumpTolerance
            self.decisiveConfidence = decisiveConfidence
            self.preWindow = preWindow
            self.sessionGap = sessionGap
            self.minimumConfidence = minimumConfidence
            self.rapidSteps = rapidSteps
            self.pacedStep = pacedStep
        }
    }

    /// One position estimate: the top item of a match.
    public struct Observation: Sendable, Equatable {
        public var programme: CueProgramme
        /// Reference seconds playing at `time` (the match's predicted current offset).
        public var position: Double
        /// Reference seconds per second (1 + time skew).
        public var rate: Double
        public var confidence: Double
        /// Stream seconds the position refers to (the end of the matched window).
        public var time: Double
        /// Unix seconds of the observation: only ONCE sessions use it.
        public var wallTime: Double
        /// The session saw the newest audio leave what it followed (`JumpDetector`): a jump to
        /// believe at once, whatever the confidence.
        public var revealsJump: Bool
        /// The newest audio does not hold this position (`StreamingResult.isStale`): it confirms
        /// nothing, and is ignored.
        public var isStale: Bool

        public init(programme: CueProgramme, position: Double, rate: Double, confidence: Double, time: Double,
                    wallTime: Double, revealsJump: Bool = false, isStale: Bool = false) {
            self.isStale = isStale
            self.programme = programme
            self.position = position
            self.rate = rate
            self.confidence = confidence
            self.time = time
            self.wallTime = wallTime
            self.revealsJump = revealsJump
        }
    }

    public enum Phase: String, Sendable {
        /// No programme yet.
        case idle
        /// Confirmed within `holdAfter`: cues fire.
        case following
        /// Not confirmed for longer than `holdAfter`: pending cues wait.
        case held
        /// Not confirmed for `lostHorizon`.
        case lost
    }

    /// What a late joiner needs: the programme, where it is, the current cues and the next one.
    public struct Snapshot: Sendable {
        public var phase: Phase
        public var programme: CueProgramme?
        public var schedule: CueSchedule?
        public var position: Double
        public var rate: Double
        public var current: [Cue]
        public var next: Cue?
        /// Stream time the next cue is due (nil when none or not following).
        public var nextTime: Double?
    }

    public let configuration: Configuration
    public private(set) var programme: CueProgramme?
    public private(set) var schedule = CueSchedule.empty(referenceDuration: 0)
    public private(set) var once: CueOnceMemory
    /// Bumped when `once` changed in a way worth saving.
    public private(set) var onceRevision = 0

    private struct Status: Sendable {
        var upcoming = false
        var started = false
        var ended = false
    }

    private var status: [Status] = []
    private var track: CueTrack?
    private var lost = false
    private var lastConfirmed = -Double.infinity
    /// The position up to which crossings have been handled: monotonic along a track.
    private var processed = 0.0
    /// An observation contradicting the track, waiting for a second one to agree.
    private var candidate: Observation?
    /// Wall and stream time of the newest observation (to date ONCE records made by `advance`).
    private var lastWall = (stream: 0.0, wall: 0.0)
    /// Steps that reported crossings in the second of stream time from `start`, and the newest.
    private var crossings = (start: -Double.infinity, count: 0, last: -Double.infinity)
    /// When the audio last started over with no observation since: predictions stop there.
    private var restartedAt: Double?

    /// Crossings wait until this time (stream seconds), or nil: too many steps reported some lately.
    private func pacedUntil(_ now: Double) -> Double? {
        guard crossings.count >= configuration.rapidSteps, now - crossings.start < 1 else { return nil }
        let until = crossings.last + configuration.pacedStep
        return until > now ? until : nil
    }

    public init(configuration: Configuration = .init(), once: CueOnceMemory = .init()) {
        self.configuration = configuration
        self.once = once
    }

    // MARK: Inputs

    /// Takes a position estimate with the schedule of its programme; returns what to publish.
    public mutating func observe(_ o: Observation, schedule newSchedule: CueSchedule) -> [CueEvent] {
        CueCoalescing.coalesce(observeStep(o, schedule: newSchedule))
    }

    private mutating func observeStep(_ o: Observation, schedule newSchedule: CueSchedule) -> [CueEvent] {
        guard o.confidence >= configuration.minimumConfidence, !o.isStale, o.position.isFinite, o.rate.isFinite, o.rate > 0,
              o.time.isFinite else { return advanceStep(to: o.time) }
        var o = o
        // Heard after the audio started over: where it went, believed at once (the restart is
        // forgotten once the track starts again or is confirmed).
        if let restart = restartedAt, o.time > restart { o.revealsJump = true }
        lastWall = (o.time, o.wallTime)
        var events: [CueEvent] = []
        if let programme, let track, !lost {
            let same = programme.isSame(as: o.programme)
            if same {
                if newSchedule != schedule { replaceSchedule(newSchedule, at: o.time, into: &events) }
                self.programme?.catalogVersion = o.programme.catalogVersion
                if abs(o.position - track.position(at: o.time)) <= configuration.jumpTolerance {
                    candidate = nil
                    confirm(o)
                    return events + advanceStep(to: o.time)
                }
            }
            guard o.confidence >= configuration.decisiveConfidence || o.revealsJump || agreesWithCandidate(o) else {
                candidate = o
                return events + advanceStep(to: o.time)
            }
            if same {
                jump(to: o, into: &events)
                return events + advanceStep(to: o.time)
            }
            events.append(lose(at: o.time))  // another programme: this one is over
        }
        acquire(o, schedule: newSchedule, into: &events)
        return events + advanceStep(to: o.time)
    }

    /// The schedule of the programme changed (the controller set or cleared its cues).
    public mutating func scheduleChanged(_ newSchedule: CueSchedule, for p: CueProgramme, at now: Double) -> [CueEvent] {
        guard let programme, programme.isSame(as: p), newSchedule != schedule else { return [] }
        var events: [CueEvent] = []
        replaceSchedule(newSchedule, at: now, into: &events)
        return CueCoalescing.coalesce(events + advanceStep(to: now))
    }

    /// The source's audio started over at `time` (a file looped or was replaced): what was due
    /// before then fires; nothing after it does until an observation says where playback is.
    public mutating func audioStartedOver(at time: Double) -> [CueEvent] {
        guard programme != nil, track != nil, !lost, time.isFinite, time > lastConfirmed else { return [] }
        let events = advanceStep(to: time)
        restartedAt = time
        return CueCoalescing.coalesce(events)
    }

    /// Brings the monitor to stream time `now`: cues due by then fire, the programme may be lost.
    public mutating func advance(to now: Double) -> [CueEvent] {
        CueCoalescing.coalesce(advanceStep(to: now))
    }

    private mutating func advanceStep(to now: Double) -> [CueEvent] {
        guard let programme, let track, !lost, now.isFinite else { return [] }
        if now - lastConfirmed >= configuration.lostHorizon { return [lose(at: now)] }
        let limit = min(now, holdUntil)
        let target = min(track.position(at: limit), schedule.referenceDuration) + 1e-6
        guard target > processed, pacedUntil(now) == nil else { return [] }
        var events: [CueEvent] = []
        cross(from: processed, to: target, now: now, programme: programme, track: track, into: &events)
        processed = target
        if !events.isEmpty {
            if now - crossings.start >= 1 { crossings = (now, 0, now) }
            crossings.count += 1
            crossings.last = now
        }
        return events
    }

    /// When `advance` has something to do next (stream seconds), or nil until an observation.
    public var nextDeadline: Double? {
        guard programme != nil, let track, !lost else { return nil }
        let lostAt = lastConfirmed + configuration.lostHorizon
        var best = lostAt
        for i in schedule.cues.indices {
            guard let position = nextPoint(i, rate: track.rate) else { continue }
            let t = track.time(at: position)
            if t <= holdUntil { best = min(best, t) }
        }
        if best < lostAt, let until = pacedUntil(best) { best = min(lostAt, until) }
        return best
    }

    /// The latest moment cues may fire on the track's prediction: `holdAfter` past the last
    /// confirmation, and never past a restart of the audio not yet observed.
    private var holdUntil: Double {
        min(lastConfirmed + configuration.holdAfter, restartedAt ?? .infinity)
    }

    /// Reference seconds per second of the programme followed (1 when none).
    public var rate: Double { track?.rate ?? 1 }

    public func snapshot(at now: Double) -> Snapshot {
        guard let programme else {
            return Snapshot(phase: .idle, programme: nil, schedule: nil, position: 0, rate: 1, current: [], next: nil, nextTime: nil)
        }
        let phase: Phase = lost || track == nil ? .lost : (now > holdUntil ? .held : .following)
        let position = track.map { min($0.position(at: min(now, holdUntil)), schedule.referenceDuration) } ?? processed
        let current = schedule.cues.indices.filter { status[$0].started && !status[$0].ended && endPosition($0) != nil }
        let next = schedule.cues.indices
            .filter { !status[$0].started && !schedule.cues[$0].isPre && !blockedByOnce(schedule.cues[$0], programme) }
            .min { startPosition($0) < startPosition($1) }
        let nextTime = next.flatMap { i in phase == .following ? track?.time(at: startPosition(i)) : nil }
        return Snapshot(phase: phase, programme: programme, schedule: schedule, position: position, rate: track?.rate ?? 1,
                        current: current.map { schedule.cues[$0] }, next: next.map { schedule.cues[$0] }, nextTime: nextTime)
    }

    // MARK: Track

    private mutating func confirm(_ o: Observation) {
        if let restart = restartedAt, o.time > restart { restartedAt = nil }
        track?.add(time: o.time, position: o.position, rate: o.rate)
        lastConfirmed = max(lastConfirmed, o.time)
        if once.heard(o.programme, at: o.wallTime, gap: configuration.sessionGap) { onceRevision += 1 }
    }

    private func agreesWithCandidate(_ o: Observation) -> Bool {
        guard let c = candidate, c.programme.isSame(as: o.programme) else { return false }
        let predicted = c.position + c.rate * (o.time - c.time)
        return abs(o.position - predicted) <= configuration.jumpTolerance
    }

    /// A fresh track from `o` (and the candidate it confirms).
    private mutating func startTrack(at o: Observation) {
        var fresh = CueTrack(time: o.time, position: o.position, rate: o.rate)
        if let c = candidate, agreesWithCandidate(o), c.time < o.time {
            fresh = CueTrack(time: c.time, position: c.position, rate: c.rate)
            fresh.add(time: o.time, position: o.position, rate: o.rate)
        }
        track = fresh
        candidate = nil
        restartedAt = nil
        lost = false
        lastConfirmed = o.time
        if once.heard(o.programme, at: o.wallTime, gap: configuration.sessionGap) { onceRevision += 1 }
    }

    // MARK: Transitions

    private mutating func acquire(_ o: Observation, schedule newSchedule: CueSchedule, into events: inout [CueEvent]) {
        let fresh = programme.map { !$0.isSame(as: o.programme) } ?? true
        let resumedFrom = fresh ? nil : processed
        if fresh {
            schedule = newSchedule
            status = Array(repeating: Status(), count: newSchedule.cues.count)
        } else if newSchedule != schedule {
            replaceSchedule(newSchedule, at: o.time, into: &events, announce: false)
        }
        programme = o.programme
        startTrack(at: o)
        let q = o.position
        events.append(CueEvent(kind: .schedule, programme: o.programme, schedule: schedule, time: o.time, position: q))
        if let from = resumedFrom {
            // The same programme heard again after it was lost: as if playback had jumped.
            land(from: from, at: q, time: o.time, into: &events)
            return
        }
        let rate = track?.rate ?? 1
        for (i, cue) in schedule.cues.enumerated() {
            if blockedByOnce(cue, o.programme) {
                status[i] = Status(upcoming: true, started: true, ended: true)
                // Still ahead: say now why it will not come (it leaves `next`).
                if !cue.isPre, startPosition(i) > q {
                    events.append(CueEvent(kind: .skipped, programme: o.programme, cue: cue, time: o.time, position: q,
                                           reason: .shownOnce))
                }
            } else if cue.isPre {
                status[i] = Status(upcoming: true, started: true, ended: true)
                if q <= configuration.preWindow { emitStart(i, time: o.time, position: q, lateness: 0, into: &events) }
            } else if cue.isPost {
                continue
            } else if startPosition(i) <= q {
                // Joined after it started: inside it, or a moment only just passed, it starts late.
                let lateness = (q - startPosition(i)) / rate
                if let end = endPosition(i) {
                    if q < end {
                        emitStart(i, time: o.time, position: q, lateness: lateness, into: &events)
                    } else {
                        status[i] = Status(upcoming: true, started: true, ended: true)
                    }
                } else if lateness <= configuration.lateLimit {
                    emitStart(i, time: o.time, position: q, lateness: lateness, into: &events)
                } else {
                    status[i] = Status(upcoming: true, started: true, ended: true)
                }
            }
        }
        announceUpcoming(before: q, rate: rate, time: o.time, into: &events)
        processed = q
    }

    private mutating func jump(to o: Observation, into events: inout [CueEvent]) {
        guard let programme, let track else { return }
        // Where playback had got to: at the observation, or where the audio started over.
        let from = min(track.position(at: min(o.time, restartedAt ?? o.time)), schedule.referenceDuration)
        events.append(CueEvent(kind: .seek, programme: programme, time: o.time, position: o.position, from: from))
        startTrack(at: o)
        land(from: processed, at: o.position, time: o.time, into: &events)
    }

    /// Playback went from `from` straight to `q`: what that does to every cue.
    private mutating func land(from: Double, at q: Double, time: Double, into events: inout [CueEvent]) {
        guard let programme else { return }
        let rate = track?.rate ?? 1
        // Current cues the landing point is outside of are over.
        for i in schedule.cues.indices where status[i].started && !status[i].ended {
            guard let end = endPosition(i) else { continue }
            if q < startPosition(i) || q >= end {
                status[i].ended = true
                events.append(CueEvent(kind: .ended, programme: programme, cue: schedule.cues[i], time: time, position: q))
            }
        }
        if q > from {
            var lastJumpRestricted: Int?
            for i in schedule.cues.indices where !status[i].started && !schedule.cues[i].isPre {
                let start = startPosition(i)
                guard start > from, start <= q else { continue }
                if blockedByOnce(schedule.cues[i], programme) {
                    status[i] = Status(upcoming: true, started: true, ended: true)
                } else if let end = endPosition(i), q < end {
                    emitStart(i, time: time, position: q, lateness: (q - start) / rate, into: &events)
                } else {
                    status[i] = Status(upcoming: true, started: true, ended: true)
                    events.append(CueEvent(kind: .skipped, programme: programme, cue: schedule.cues[i], time: time, position: q,
                                           reason: .jumpedOver))
                    if schedule.cues[i].restrictions.contains(.jump) { lastJumpRestricted = events.count - 1 }
                }
            }
            if let owed = lastJumpRestricted { events[owed].owed = true }
        } else {
            for i in schedule.cues.indices where !schedule.cues[i].isPre {
                let cue = schedule.cues[i]
                if blockedByOnce(cue, programme) { continue }
                let start = startPosition(i)
                if start > q {
                    status[i] = Status()
                } else if let end = endPosition(i), q < end, !(status[i].started && !status[i].ended) {
                    emitStart(i, time: time, position: q, lateness: (q - start) / rate, into: &events)
                }
            }
        }
        announceUpcoming(before: q, rate: rate, time: time, into: &events)
        processed = q
    }

    /// UPCOMING now for cues that start within the lead of `q` and were not announced.
    private mutating func announceUpcoming(before q: Double, rate: Double, time: Double, into events: inout [CueEvent]) {
        guard let programme else { return }
        for i in schedule.cues.indices where !status[i].upcoming && !status[i].started {
            let start = startPosition(i)
            guard start > q, start - configuration.lead * rate <= q, !schedule.cues[i].isPre else { continue }
            status[i].upcoming = true
            events.append(CueEvent(kind: .upcoming, programme: programme, cue: schedule.cues[i], time: time, position: q))
        }
    }

    private mutating func lose(at now: Double) -> CueEvent {
        let position = track.map { min($0.position(at: min(now, holdUntil)), schedule.referenceDuration) } ?? processed
        restartedAt = nil
        // Current cues are over; when the programme comes back inside one, it starts again.
        for i in schedule.cues.indices where status[i].started && !status[i].ended && endPosition(i) != nil {
            status[i] = Status(upcoming: true)
        }
        lost = true
        track = nil
        candidate = nil
        processed = max(processed, min(position, schedule.referenceDuration))
        return CueEvent(kind: .programmeLost, programme: programme ?? CueProgramme(catalogName: "", referenceIndex: 0),
                        time: now, position: position)
    }

    private mutating func replaceSchedule(_ newSchedule: CueSchedule, at now: Double, into events: inout [CueEvent],
                                          announce: Bool = true) {
        guard let programme else { return }
        var byID: [String: Status] = [:]
        let keptIDs = Set(newSchedule.cues.map(\.id))
        for (i, cue) in schedule.cues.enumerated() {
            byID[cue.id] = status[i]
            // A current cue the new schedule drops is over.
            if !keptIDs.contains(cue.id), status[i].started, !status[i].ended, endPosition(i) != nil {
                events.append(CueEvent(kind: .ended, programme: programme, cue: cue, time: now, position: processed))
            }
        }
        schedule = newSchedule
        status = newSchedule.cues.indices.map { i in
            if let kept = byID[newSchedule.cues[i].id] { return kept }
            // A new cue already behind playback is not fired on arrival.
            let passed = !newSchedule.cues[i].isPost && startPosition(i) <= processed
            return passed ? Status(upcoming: true, started: true, ended: true) : Status()
        }
        if announce {
            events.append(CueEvent(kind: .schedule, programme: programme, schedule: newSchedule, time: now, position: processed))
        }
    }

    // MARK: Crossing

    private enum Crossing: Int { case end = 0, start = 1, upcoming = 2 }

    /// Handles every cue point in (from, to] in timeline order.
    private mutating func cross(from: Double, to: Double, now: Double, programme: CueProgramme, track: CueTrack,
                                into events: inout [CueEvent]) {
        var due: [(position: Double, kind: Crossing, index: Int)] = []
        for i in schedule.cues.indices where !schedule.cues[i].isPre {
            let s = status[i]
            let start = startPosition(i)
            let startsNow = !s.started && start > from && start <= to
            if !s.started, !s.upcoming {
                let up = start - configuration.lead * track.rate
                if up > from, up <= to, start > to { due.append((up, .upcoming, i)) }
            }
            if startsNow { due.append((start, .start, i)) }
            if let end = endPosition(i), (s.started && !s.ended) || startsNow, end > from, end <= to {
                due.append((end, .end, i))
            }
        }
        guard !due.isEmpty else { return }
        due.sort { ($0.position, $0.kind.rawValue, $0.index) < ($1.position, $1.kind.rawValue, $1.index) }
        for (position, kind, i) in due {
            let lateness = max(0, now - track.time(at: position))
            let cue = schedule.cues[i]
            switch kind {
            case .upcoming:
                guard !status[i].upcoming, !blockedByOnce(cue, programme) else { continue }
                status[i].upcoming = true
                events.append(CueEvent(kind: .upcoming, programme: programme, cue: cue, time: now, position: position,
                                       lateness: lateness))
            case .start:
                if blockedByOnce(cue, programme) {
                    status[i] = Status(upcoming: true, started: true, ended: true)
                    events.append(CueEvent(kind: .skipped, programme: programme, cue: cue, time: now, position: position,
                                           reason: .shownOnce))
                } else if lateness > configuration.lateLimit {
                    status[i] = Status(upcoming: true, started: true, ended: true)
                    events.append(CueEvent(kind: .skipped, programme: programme, cue: cue, time: now, position: position,
                                           lateness: lateness, reason: .tooLate))
                } else {
                    emitStart(i, time: now, position: position, lateness: lateness, into: &events)
                }
            case .end:
                guard status[i].started, !status[i].ended else { continue }
                status[i].ended = true
                events.append(CueEvent(kind: .ended, programme: programme, cue: cue, time: now, position: position,
                                       lateness: lateness))
            }
        }
    }

    private mutating func emitStart(_ i: Int, time: Double, position: Double, lateness: Double, into events: inout [CueEvent]) {
        guard let programme else { return }
        let cue = schedule.cues[i]
        // Moments (PRE, POST, cues without a length) are never current.
        status[i] = Status(upcoming: true, started: true, ended: endPosition(i) == nil)
        if cue.isOnce {
            let wall = lastWall.wall + (time - lastWall.stream)
            once.recordStart(cue.id, in: programme, at: wall)
            onceRevision += 1
        }
        events.append(CueEvent(kind: .started, programme: programme, cue: cue, time: time, position: position, lateness: lateness))
    }

    // MARK: Timeline

    /// Where cue `i` starts: POST cues at the end of the reference.
    private func startPosition(_ i: Int) -> Double {
        schedule.cues[i].isPost ? schedule.referenceDuration : schedule.cues[i].start
    }

    /// Where cue `i` ends (within the reference), or nil for a moment.
    private func endPosition(_ i: Int) -> Double? {
        let cue = schedule.cues[i]
        guard !cue.isPre, !cue.isPost, let end = schedule.end(ofCueAt: i) else { return nil }
        let clamped = min(end, schedule.referenceDuration)
        return clamped > cue.start ? clamped : nil
    }

    /// The next position past `processed` where cue `i` has something to report (UPCOMING,
    /// STARTED or ENDED), or nil.
    private func nextPoint(_ i: Int, rate: Double) -> Double? {
        let s = status[i]
        if schedule.cues[i].isPre { return nil }
        if !s.started {
            let start = startPosition(i)
            let upcoming = start - configuration.lead * rate
            return !s.upcoming && upcoming > processed ? upcoming : (start > processed ? start : nil)
        }
        if !s.ended, let end = endPosition(i), end > processed { return end }
        return nil
    }

    private func blockedByOnce(_ cue: Cue, _ programme: CueProgramme) -> Bool {
        cue.isOnce && once.hasStarted(cue.id, in: programme)
    }
}
