/// Cues crossed in one step of the monitor (one `observe`, `advance` or `scheduleChanged`: a jump,
/// a late start, a dense schedule) reported as one event with a count, so that what a step
/// publishes and logs is bounded whatever the schedule holds. The rules, applied in order:
///
/// 1. **Crossed cues.** A cue SKIPPED in the step, or STARTED and then ENDED in it (its whole
///    span crossed), is crossed. More than `most` crossed cues become one SKIPPED event where the
///    last of them was reported: its cue is the owed one if any was owed (`owed` set), else the
///    last; `count` is how many cues it stands for.
/// 2. **Same kind.** Of what is left, more than `most` UPCOMING, STARTED, ENDED or SKIPPED events
///    become one event of that kind where the last was, with the count (a SKIPPED keeps the owed
///    cue, as above). Clients that need every current cue then call `GetCurrent`.
///
/// SCHEDULE, SEEK and PROGRAMME_LOST are never merged; the order of what is kept is unchanged.
public enum CueCoalescing {
    /// A jump over a few cues still reports each; a dense schedule or a long jump does not.
    public static let most = 4

    public static func coalesce(_ events: [CueEvent]) -> [CueEvent] {
        guard events.count > most else { return events }
        var slots: [CueEvent?] = events
        // 1. Crossed cues: (the index of the event that represents it, the indices it used).
        var crossed: [(event: CueEvent, at: Int, used: [Int])] = []
        var openStarts: [String: Int] = [:]
        for (i, e) in events.enumerated() {
            guard let id = e.cue?.id else { continue }
            switch e.kind {
            case .started: openStarts[id] = i
            case .ended:
                if let s = openStarts.removeValue(forKey: id) {
                    var skipped = events[s]
                    skipped.kind = .skipped
                    skipped.reason = SkipReason.crossed.rawValue
                    crossed.append((skipped, i, [s, i]))
                }
            case .skipped: crossed.append((e, i, [i]))
            default: break
            }
        }
        if crossed.reduce(0, { $0 + $1.event.count }) > most {
            for c in crossed { for i in c.used { slots[i] = nil } }
            slots[crossed.last!.at] = merged(crossed.map(\.event))
        }
        // 2. Same kind.
        for kind in [CueEvent.Kind.upcoming, .started, .ended, .skipped] {
            let indices = slots.indices.filter { slots[$0]?.kind == kind }
            let group = indices.map { slots[$0]! }
            guard group.reduce(0, { $0 + $1.count }) > most, group.count > 1 else { continue }
            for i in indices { slots[i] = nil }
            slots[indices.last!] = merged(group)
        }
        return slots.compactMap { $0 }
    }

    /// One event for `group` (in report order): the last, or the last owed one, with their count.
    private static func merged(_ group: [CueEvent]) -> CueEvent {
        let owed = group.last { $0.owed }
        var event = owed ?? group.last!
        event.count = group.reduce(0) { $0 + $1.count }
        event.owed = owed != nil
        event.time = group.last!.time
        return event
    }
}
