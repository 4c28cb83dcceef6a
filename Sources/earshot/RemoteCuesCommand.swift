import ArgumentParser
import EarshotAuthoring
import EarshotCore
import EarshotSync
import EarshotTransport
import EarshotWire
import Foundation

/// `earshot remote cues`: follow the daemon's cues, show a reference's schedule, or set and
/// clear cues at run time (the controller).
struct RemoteCuesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cues",
        abstract: "Follow the cues the daemon fires as the programme plays; show, set or clear a reference's cues.",
        discussion: """
            Cues are events on a reference's timeline, modelled on HLS interstitials (see \
            `earshot catalog cues --help`). The daemon fires them from what it hears: UPCOMING a \
            few seconds before (time to preload), STARTED when the programme crosses a cue, ENDED, \
            SKIPPED when playback jumps over one, SEEK, PROGRAMME_LOST.

            Examples:
              earshot remote cues                    (follow: events, the current and next cue)
              earshot remote cues follow --json
              earshot remote cues schedule --id episode-1
              earshot remote cues set --catalog show --reference 0 quiz.m3u8
              earshot remote cues clear --catalog show --reference 0

            set and clear need an operator or admin key (the controller).
            """,
        subcommands: [RemoteCuesFollowCommand.self, RemoteCuesScheduleCommand.self, RemoteCuesSetCommand.self,
                      RemoteCuesClearCommand.self],
        defaultSubcommand: RemoteCuesFollowCommand.self
    )
}

/// Which reference a cue command is about.
struct CueReferenceOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The catalog's name on the daemon (with --reference).", valueName: "name"))
    var catalog = ""
    @Option(help: ArgumentHelp("The reference's index in the catalog.", valueName: "N"))
    var reference: UInt32 = 0
    @Option(name: .customLong("id"), help: ArgumentHelp("Or: the id of a media item of the reference.", valueName: "item-id"))
    var mediaItemID = ""

    var request: Earshot_V1_CueScheduleRequest {
        var r = Earshot_V1_CueScheduleRequest()
        r.catalog = catalog
        r.referenceIndex = reference
        r.mediaItemID = mediaItemID
        return r
    }

    func validate() throws {
        guard !catalog.isEmpty || !mediaItemID.isEmpty else {
            throw ValidationError("name the reference: --catalog NAME --reference N, or --id MEDIA_ITEM_ID")
        }
    }
}

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

/// `earshot remote cues follow` (the default)
struct RemoteCuesFollowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "follow",
        abstract: "Print cue events as the daemon fires them, with the current and next cue and a countdown.")

    @OptionGroup var remote: RemoteOptions
    @Flag(help: "One JSON object (CueEvent) per line.") var json = false
    @Option(help: ArgumentHelp("Stop after this many seconds.", valueName: "seconds")) var duration: Double?

    func run() throws {
        let (remote, json, duration) = (self.remote, self.json, self.duration)
        let live = !json && Terminal.stdoutIsTerminal
        let state = Locked<Earshot_V1_CueState?>(nil)
        let output = Locked(())
        @Sendable func statusLine() {
            guard live, let s = state.withLock({ $0 }) else { return }
            output.withLock { _ in Terminal.outputRaw("\r\u{1B}[2K" + Terminal.oneLine(CueFormat.status(s))) }
        }
        defer { if live { print() } }
        try runUntilInterrupted(duration: duration) {
            let client = try remote.client()
            defer { client.close() }
            let limit = Duration.milliseconds(Int((duration ?? 86_400) * 1000) + 5000)
            let ticker = Task {
                while !Task.isCancelled {
                    statusLine()
                    try? await Task.sleep(for: .milliseconds(200))
                }
            }
            defer { ticker.cancel() }
            do {
                for try await event in client.stream(Methods.Cues.streamCues, Earshot_V1_StreamCuesRequest(), timeout: limit) {
                    if json {
                        print(RemoteFormat.json(event))
                        continue
                    }
                    if event.kind == .state {
                        state.withLock { $0 = event.state }
                    } else {
                        let stamp = ISODate.render(Date())
                        output.withLock { _ in
                            if live { Terminal.outputRaw("\r\u{1B}[2K") }
                            print("\(stamp)  \(CueFormat.event(event))")
                        }
                        // The current and next cue after this event, from the daemon.
                        if let s = try? await client.call(Methods.Cues.getCurrent, Earshot_V1_GetCurrentCuesRequest()) {
                            state.withLock { $0 = s }
                        }
                    }
                    if !live, event.kind == .state || event.kind == .started || event.kind == .ended {
                        if let s = state.withLock({ $0 }) { print("  " + CueFormat.status(s)) }
                    }
                    statusLine()
                }
            } catch let error as RpcError {
                if error.code != .cancelled { throw remote.failure(error) }
            } catch {
                throw CLIFailure("\(remote.server): \(error)", status: .remote)
            }
        }
    }
}

/// `earshot remote cues schedule`
struct RemoteCuesScheduleCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schedule",
        abstract: "Show the cues of a reference (or, with no reference named, of the programme playing).")

    @OptionGroup var remote: RemoteOptions
    @Option(help: ArgumentHelp("The catalog's name on the daemon (with --reference).", valueName: "name")) var catalog = ""
    @Option(help: ArgumentHelp("The reference's index in the catalog.", valueName: "N")) var reference: UInt32 = 0
    @Option(name: .customLong("id"), help: ArgumentHelp("Or: the id of a media item of the reference.", valueName: "item-id"))
    var mediaItemID = ""
    @Flag(help: "Print the CueSchedule as JSON.") var json = false

    func run() throws {
        var request = Earshot_V1_CueScheduleRequest()
        request.catalog = catalog
        request.referenceIndex = reference
        request.mediaItemID = mediaItemID
        let schedule = try remote.call(Methods.Cues.getSchedule, request)
        if json {
            print(RemoteFormat.json(schedule))
            return
        }
        print("\(CueFormat.programme(schedule.programme)), \(RemoteFormat.seconds(schedule.referenceDuration)) long: "
            + "\(schedule.cues.count) cue(s)" + (schedule.source == .controller ? ", set by the controller" : " from the catalog"))
        for c in schedule.cues { print("  " + CueFormat.cue(c)) }
    }
}

/// `earshot remote cues set`
struct RemoteCuesSetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Replace a reference's cues on the daemon from a playlist or CSV (operator or admin).",
        discussion: """
            The file is read as by `earshot catalog cues import` (.m3u8/.m3u: EXT-X-DATERANGE tags; \
            .csv: the cue CSV) and checked against the reference's length on the daemon. The cues \
            serve at once, are kept across restarts, and are dropped when the catalog is replaced \
            by a new version or by `earshot remote cues clear`.
            """)

    @OptionGroup var remote: RemoteOptions
    @OptionGroup var target: CueReferenceOptions
    @Option(help: ArgumentHelp("Playlists: the date at which the reference starts (ISO 8601), when the playlist has no EXT-X-PROGRAM-DATE-TIME.",
                               valueName: "date")) var origin: String?
    @Option(help: ArgumentHelp("The file's format, when its name does not tell (.m3u8, .m3u, .csv).", valueName: "m3u8|csv"))
    var format: CueFileFormat?
    @Argument(help: ArgumentHelp("The cues: a .m3u8 playlist or a .csv file.", valueName: "file")) var file: String

    func validate() throws {
        if let origin, ISODate.parse(origin) == nil {
            throw ValidationError("--origin \(origin) is not an ISO 8601 date-time with a zone (2024-05-01T20:00:00Z)")
        }
    }

    func run() throws {
        _ = try CueFileFormat.of(file, given: format)  // a usage error before the daemon is asked
        let current = try remote.call(Methods.Cues.getSchedule, target.request)
        let cues = try CueFileFormat.readCues(file, given: format, origin: origin, referenceDuration: current.referenceDuration)
        var request = Earshot_V1_SetCuesRequest()
        request.reference = target.request
        request.cues = cues.map { Earshot_V1_Cue($0) }
        let schedule = try remote.call(Methods.Cues.setCues, request)
        print("set \(schedule.cues.count) cue(s) on \(CueFormat.programme(schedule.programme))")
    }
}

/// `earshot remote cues clear`
struct RemoteCuesClearCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clear", abstract: "Drop cues set at run time: the catalog's own cues serve again (operator or admin).")

    @OptionGroup var remote: RemoteOptions
    @OptionGroup var target: CueReferenceOptions

    func run() throws {
        let schedule = try remote.call(Methods.Cues.clearCues, target.request)
        print("\(CueFormat.programme(schedule.programme)): back to the catalog's \(schedule.cues.count) cue(s)")
    }
}
