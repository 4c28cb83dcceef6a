import ArgumentParser
import EarshotAuthoring
import EarshotCore
import EarshotSync
import EarshotTransport
import EarshotWire
import Foundation

enum CueFormat {
    static func kind(_ k: Earshot_V1_CueEvent.Kind) -> String {
        switch k {
        case .schedule: "SCHEDULE"
        case .upcoming: "UPCOMING"
        case .started: "STARTED"
        case .ended: "ENDED"
        case .skipped: "SKIPPED"
        case .seek: "SEEK"
        case .programmeLost: "PROGRAMME_LOST"
        case .state: "STATE"
        default: "?"
        }
    }

    static func programme(_ p: Earshot_V1_CueProgramme) -> String {
        (p.title.isEmpty ? "reference \(p.referenceIndex)" : p.title) + " (\(p.catalog) v\(p.catalogVersion))"
    }

    static func cue(_ c: Earshot_V1_Cue) -> String {
        var parts = ["\(c.id) at \(RemoteFormat.seconds(c.start))"]
        if c.hasEnd { parts.append("to \(RemoteFormat.seconds(c.end))") }
        if !c.cueClass.isEmpty { parts.append(c.cueClass) }
        if !c.flags.isEmpty { parts.append("CUE=" + c.flags.joined(separator: ",")) }
        if !c.restrictions.isEmpty { parts.append("X-RESTRICT=" + c.restrictions.joined(separator: ",")) }
        if !c.assetUri.isEmpty { parts.append(c.assetUri) }
        if !c.assetList.isEmpty { parts.append("list " + c.assetList) }
        return parts.joined(separator: "  ")
    }

    /// "(12 cues crossed together)" for an event that stands for several.
    static func together(_ e: Earshot_V1_CueEvent) -> String {
        e.coalesced > 1 ? "  (\(e.coalesced) cues crossed together, this one the last)" : ""
    }

    static func event(_ e: Earshot_V1_CueEvent) -> String {
        let head = "\(kind(e.kind)) "
        switch e.kind {
        case .schedule:
            return head + "\(programme(e.programme)): \(e.schedule.cues.count) cue(s)"
                + (e.schedule.source == .controller ? " set by the controller" : "")
        case .seek:
            return head + "\(programme(e.programme)) from \(RemoteFormat.seconds(e.fromPosition)) to \(RemoteFormat.seconds(e.position))"
        case .programmeLost:
            return head + "\(programme(e.programme)) at \(RemoteFormat.seconds(e.position))"
        case .upcoming:
            let due = Double(e.dueUnixMs) / 1000 - Date().timeIntervalSince1970
            return head + cue(e.cue) + String(format: "  (in %.1f s)", max(0, due)) + together(e)
        default:
            var line = head + cue(e.cue)
            if e.latenessSeconds > 0.05 { line += String(format: "  (%.1f s late)", e.latenessSeconds) }
            if !e.reason.isEmpty { line += "  (\(e.reason))" }
            if e.owed { line += "  (owed: JUMP-restricted)" }
            return line + together(e)
        }
    }

    /// "now: q3 · next: q4 in 12.3 s" from a state.
    static func status(_ s: Earshot_V1_CueState, now: Date = Date()) -> String {
        switch s.phase {
        case .idle: return "waiting for a programme"
        case .lost: return "programme lost (\(programme(s.programme)))"
        default: break
        }
        let elapsed = now.timeIntervalSince1970 - Double(s.takenAtUnixMs) / 1000
        let position = s.position + (s.phase == .following ? elapsed * s.rate : 0)
        var line = "\(programme(s.programme)) at \(RemoteFormat.seconds(position))"
        if s.rate != 0, abs(s.rate - 1) > 0.001 { line += String(format: " (%+.1f %%)", (s.rate - 1) * 100) }
        if s.phase == .held { line += ", not confirmed" }
        line += "  now: " + (s.current.isEmpty ? "—" : s.current.map(\.id).joined(separator: ", "))
        if s.hasNext {
            line += "  next: \(s.next.id)"
            if s.nextDueUnixMs > 0 {
                line += String(format: " in %.1f s", max(0, Double(s.nextDueUnixMs) / 1000 - now.timeIntervalSince1970))
            }
        }
        return line
    }
}
