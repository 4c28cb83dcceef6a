import EarshotCore

// Cues between the core and the wire. Enumerated attributes travel as their HLS tokens
// ("SKIP", "PRE", …) so a client shows what the playlist said.

extension Earshot_V1_Cue {
    /// `end`: where the cue ends on its schedule's timeline (nil for a moment).
    public init(_ cue: Cue, end: Double? = nil) {
        self.init()
        id = cue.id
        cueClass = cue.cueClass
        start = cue.start
        if let v = cue.duration { duration = v }
        if let v = cue.plannedDuration { plannedDuration = v }
        endOnNext = cue.endOnNext
        assetUri = cue.assetURI ?? ""
        assetList = cue.assetList ?? ""
        if let v = cue.resumeOffset { resumeOffset = v }
        if let v = cue.playoutLimit { playoutLimit = v }
        restrictions = cue.restrictions.map(\.rawValue)
        flags = cue.flags.map(\.rawValue)
        snap = cue.snap.map(\.rawValue)
        if let v = cue.contentMayVary { contentMayVary = v }
        timelineOccupies = cue.timelineOccupies?.rawValue ?? ""
        timelineStyle = cue.timelineStyle?.rawValue ?? ""
        if let v = cue.skipControlOffset { skipControlOffset = v }
        if let v = cue.skipControlDuration { skipControlDuration = v }
        skipControlLabelID = cue.skipControlLabelID ?? ""
        attributes = cue.attributes.mapValues(Earshot_V1_CueAttribute.init)
        if let end { self.end = end }
    }
}

extension Earshot_V1_CueAttribute {
    public init(_ attribute: CueAttribute) {
        self.init()
        switch attribute.kind {
        case .quotedString: kind = .quotedString
        case .hexadecimal: kind = .hexadecimal
        case .decimal: kind = .decimal
        case .enumerated: kind = .enumerated
        }
        value = attribute.value
    }
}

extension Cue {
    /// A cue sent by a client; throws `invalidArgument`-style `catalogInvalid` naming what is wrong.
    public init(wire w: Earshot_V1_Cue) throws(EarshotError) {
        func tokens<T: RawRepresentable>(_ values: [String], _ name: String) throws(EarshotError) -> [T] where T.RawValue == String {
            var out: [T] = []
            for v in values {
                guard let t = T(rawValue: v) else { throw .catalogInvalid("cue \(w.id): \(name) has no value \"\(v)\"") }
                out.append(t)
            }
            return out
        }
        func token<T: RawRepresentable>(_ value: String, _ name: String) throws(EarshotError) -> T? where T.RawValue == String {
            if value.isEmpty { return nil }
            guard let t = T(rawValue: value) else { throw .catalogInvalid("cue \(w.id): \(name) has no value \"\(value)\"") }
            return t
        }
        var attributes: [String: CueAttribute] = [:]
        for (name, a) in w.attributes {
            let kind: CueAttribute.Kind
            switch a.kind {
            case .quotedString: kind = .quotedString
            case .hexadecimal: kind = .hexadecimal
            case .decimal: kind = .decimal
            case .enumerated: kind = .enumerated
            case .unspecified, .UNRECOGNIZED: throw .catalogInvalid("cue \(w.id): attribute \(name) has no kind")
            }
            attributes[name] = CueAttribute(kind, a.value)
        }
        self.init(
            id: w.id, cueClass: w.cueClass, start: w.start, duration: w.hasDuration ? w.duration : nil,
            plannedDuration: w.hasPlannedDuration ? w.plannedDuration : nil, endOnNext: w.endOnNext,
            assetURI: w.assetUri.isEmpty ? nil : w.assetUri, assetList: w.assetList.isEmpty ? nil : w.assetList,
            resumeOffset: w.hasResumeOffset ? w.resumeOffset : nil, playoutLimit: w.hasPlayoutLimit ? w.playoutLimit : nil,
            restrictions: try tokens(w.restrictions, "X-RESTRICT"), flags: try tokens(w.flags, "CUE"),
            snap: try tokens(w.snap, "X-SNAP"), contentMayVary: w.hasContentMayVary ? w.contentMayVary : nil,
            timelineOccupies: try token(w.timelineOccupies, "X-TIMELINE-OCCUPIES"),
            timelineStyle: try token(w.timelineStyle, "X-TIMELINE-STYLE"),
            skipControlOffset: w.hasSkipControlOffset ? w.skipControlOffset : nil,
            skipControlDuration: w.hasSkipControlDuration ? w.skipControlDuration : nil,
            skipControlLabelID: w.skipControlLabelID.isEmpty ? nil : w.skipControlLabelID, attributes: attributes)
    }
}

extension Earshot_V1_CueSchedule {
    public init(_ schedule: CueSchedule, programme: Earshot_V1_CueProgramme, source: Source) {
        self.init()
        self.programme = programme
        referenceDuration = schedule.referenceDuration
        cues = schedule.cues.indices.map { Earshot_V1_Cue(schedule.cues[$0], end: schedule.end(ofCueAt: $0)) }
        self.source = source
    }
}

extension Earshot_V1_CueProgramme {
    public init(_ programme: CueProgramme, title: String = "") {
        self.init()
        catalog = programme.catalogName
        catalogVersion = UInt64(max(0, programme.catalogVersion))
        referenceIndex = UInt32(clamping: programme.referenceIndex)
        self.title = title
    }
}

extension Earshot_V1_CueEvent.Kind {
    public init(_ kind: CueEvent.Kind) {
        switch kind {
        case .schedule: self = .schedule
        case .upcoming: self = .upcoming
        case .started: self = .started
        case .ended: self = .ended
        case .skipped: self = .skipped
        case .seek: self = .seek
        case .programmeLost: self = .programmeLost
        }
    }
}

extension Earshot_V1_CueState.Phase {
    public init(_ phase: CueMonitor.Phase) {
        switch phase {
        case .idle: self = .idle
        case .following: self = .following
        case .held: self = .held
        case .lost: self = .lost
        }
    }
}
