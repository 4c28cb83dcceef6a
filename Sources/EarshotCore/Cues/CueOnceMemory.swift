/// Which ONCE cues have started, per programme, and when each programme was last heard: a cue
/// flagged ONCE never starts twice in a programme session, which ends when the programme has not
/// been heard for `CueMonitor.Configuration.sessionGap`. Codable so the daemon keeps it across a
/// restart; times are wall-clock seconds (Unix time), since stream time begins again at start.
public struct CueOnceMemory: Sendable, Equatable, Codable {
    public struct Programme: Sendable, Equatable, Codable {
        public var started: Set<String>
        public var lastHeard: Double
    }

    public private(set) var programmes: [String: Programme] = [:]

    public init() {}

    public func hasStarted(_ cueID: String, in programme: CueProgramme) -> Bool {
        programmes[programme.key]?.started.contains(cueID) ?? false
    }

    mutating func recordStart(_ cueID: String, in programme: CueProgramme, at wallTime: Double) {
        programmes[programme.key, default: Programme(started: [], lastHeard: wallTime)].started.insert(cueID)
    }

    /// The programme was heard at `wallTime`; a session older than `gap` is forgotten first.
    /// Returns whether anything stored changed in a way worth saving (not every heartbeat is).
    mutating func heard(_ programme: CueProgramme, at wallTime: Double, gap: Double) -> Bool {
        guard var entry = programmes[programme.key] else { return false }
        if wallTime - entry.lastHeard > gap {
            programmes[programme.key] = nil
            return true
        }
        let worthSaving = wallTime - entry.lastHeard > 60
        entry.lastHeard = max(entry.lastHeard, wallTime)
        programmes[programme.key] = entry
        return worthSaving
    }

    /// Drops sessions older than `gap` at `wallTime` (a restored memory may hold stale ones).
    public mutating func expire(at wallTime: Double, gap: Double) {
        programmes = programmes.filter { wallTime - $0.value.lastHeard <= gap }
    }
}
