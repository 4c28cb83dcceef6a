/// The cues of one reference, checked and in timeline order: what a catalog stores and what the
/// monitor follows. Cues that start together keep the order they were given in (HLS plays
/// interstitials scheduled at the same time in tag order).
public struct CueSchedule: Sendable, Equatable {
    public private(set) var cues: [Cue]
    /// Length of the reference the cues belong to, in seconds.
    public let referenceDuration: Double

    /// Checks `cues` against a reference of `referenceDuration` seconds and `CueLimits`; throws
    /// `catalogInvalid` naming the first cue that is wrong and why, or the limit passed.
    public init(_ cues: [Cue], referenceDuration: Double) throws(EarshotError) {
        try CueLimits.check(cues)
        var seen = Set<String>()
        for cue in cues {
            try Self.check(cue, referenceDuration: referenceDuration)
            guard seen.insert(cue.id).inserted else { throw .catalogInvalid("cue \(cue.id): the id is given twice") }
        }
        self.cues = cues.enumerated().sorted { ($0.element.start, $0.offset) < ($1.element.start, $1.offset) }.map(\.element)
        self.referenceDuration = referenceDuration
    }

    /// No cues.
    public static func empty(referenceDuration: Double) -> CueSchedule {
        // Nothing to check in no cues.
        try! CueSchedule([], referenceDuration: referenceDuration)
    }

    public var isEmpty: Bool { cues.isEmpty }

    /// Where cue `index` ends on the timeline, or nil for a point in time. `END-ON-NEXT` ends it
    /// where the next cue of the same class starts (or at the end of the reference).
    public func end(ofCueAt index: Int) -> Double? {
        let cue = cues[index]
        if let length = cue.length { return cue.start + length }
        guard cue.endOnNext else { return nil }
        let next = cues[(index + 1)...].first { $0.cueClass == cue.cueClass && $0.start > cue.start }
        return next?.start ?? referenceDuration
    }

    private static func check(_ cue: Cue, referenceDuration: Double) throws(EarshotError) {
        func fail(_ why: String) -> EarshotError { .catalogInvalid("cue \(cue.shownID): \(why)") }
        guard !cue.id.isEmpty else { throw fail("the id is empty") }
        for (text, what) in [(cue.id, "the id"), (cue.cueClass, "CLASS")] + cue.attributes.keys.map({ ($0, "an attribute name") }) {
            if let problem = NameRule.problem(text, as: what) { throw fail(problem) }
        }
        guard cue.start.isFinite, cue.start >= 0, cue.start <= referenceDuration else {
            throw fail("starts at \(cue.start) s, outside the reference (0–\(referenceDuration) s)")
        }
        let lengths: [(String, Double?)] = [
            ("DURATION", cue.duration), ("PLANNED-DURATION", cue.plannedDuration), ("X-PLAYOUT-LIMIT", cue.playoutLimit),
            ("X-SKIP-CONTROL-OFFSET", cue.skipControlOffset), ("X-SKIP-CONTROL-DURATION", cue.skipControlDuration),
        ]
        for case let (name, value?) in lengths where !(value.isFinite && value >= 0) {
            throw fail("\(name) is \(value); it must be a number of seconds, 0 or more")
        }
        if let r = cue.resumeOffset, !r.isFinite { throw fail("X-RESUME-OFFSET is not a number") }
        if cue.duration != nil, cue.endOnNext { throw fail("END-ON-NEXT cannot be given with a DURATION") }
        if cue.endOnNext, cue.cueClass.isEmpty { throw fail("END-ON-NEXT needs a CLASS") }
        if cue.cueClass == Cue.interstitialClass {
            switch (cue.assetURI, cue.assetList) {
            case (nil, nil): throw fail("an interstitial needs X-ASSET-URI or X-ASSET-LIST")
            case (_?, _?): throw fail("an interstitial takes X-ASSET-URI or X-ASSET-LIST, not both")
            default: break
            }
        }
        if cue.isPre, cue.isPost { throw fail("CUE cannot be both PRE and POST") }
    }
}
