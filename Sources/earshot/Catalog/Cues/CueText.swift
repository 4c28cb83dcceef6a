import ArgumentParser
import EarshotAuthoring
import EarshotCore
import EarshotSystem
import Foundation

/// How cue lists and times are shown to people.
enum CueText {
    static func count(_ n: Int) -> String { n == 1 ? "1 cue" : "\(n) cues" }

    /// "3 cues, 2 interstitials, from 0:00:00.000 to 0:12:30.000".
    static func summary(_ schedule: CueSchedule) -> String {
        guard !schedule.isEmpty else { return "no cues" }
        let interstitials = schedule.cues.filter { $0.cueClass == Cue.interstitialClass }.count
        let first = schedule.cues.map(\.start).min() ?? 0
        let last = schedule.cues.indices.map { schedule.end(ofCueAt: $0) ?? schedule.cues[$0].start }.max() ?? first
        return "\(count(schedule.cues.count)), \(interstitials) interstitial\(interstitials == 1 ? "" : "s"), "
            + "from \(clock(first)) to \(clock(last))"
    }

    /// h:mm:ss.mmm (to the nearest millisecond).
    static func clock(_ seconds: Double) -> String {
        guard seconds.isFinite, abs(seconds) < 1e12 else { return "\(seconds) s" }
        let ms = Int((abs(seconds) * 1000).rounded())
        let (h, m, s, f) = (ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000)
        func pad(_ v: Int, _ width: Int) -> String { String(repeating: "0", count: max(0, width - String(v).count)) + String(v) }
        return (seconds < 0 ? "-" : "") + "\(h):\(pad(m, 2)):\(pad(s, 2)).\(pad(f, 3))"
    }
}
