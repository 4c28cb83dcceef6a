import ArgumentParser
import Dispatch
import EarshotAudio
import EarshotCore
import EarshotLive
import EarshotSync
import Foundation

/// `earshot listen`: live recognition from a capture device or a file played in real time.
struct ListenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "listen",
        abstract: "Listen to a capture device (or a file played in real time) and print matches live.",
        discussion: """
            Captures audio, fingerprints it as it arrives and matches the last seconds heard \
            (up to the catalog's maximum query duration) about once a second, printing as it \
            goes until interrupted (Ctrl-C, SIGTERM) or until --duration seconds have passed; \
            a one-line summary goes to stderr at the end.

            Each new match is one line: the media item and its id, the predicted current offset \
            (where in the reference "now" is), the frequency skew in percent and the confidence \
            (0…1). On a terminal, a status line below keeps the offset of the current match \
            advancing; elsewhere (logs, pipes) each repeated match of the same playback is a \
            line of its own starting with "repeat:". A lost match, or nothing matched yet, is \
            one "no match" line. --json prints one JSON object per line and result instead: \
            {"result": "match" | "noMatch" | "error", "repeat": ..., "streamTime": seconds \
            heard, "items": [...]}, the items as `earshot match --json` prints them.

            --device takes any ALSA capture PCM (`earshot devices` lists them): default, \
            hw:1,0, plughw:CARD=Device,DEV=0. A device that is missing, vanishes or fails is \
            reported on stderr and reopened until it works again; listening goes on. To \
            listen to a recording, no ALSA file PCM or asoundrc is needed: --source \
            file:<path> plays any audio file in real time, as a TV would, and --loop repeats \
            it; without --loop, listening ends with the file. A file that is deleted, \
            truncated or replaced while it plays is treated like a device: reported, retried, \
            and played again from its start once it is audio again.

            Exit status: 0 when listening ended (interrupted, --duration passed, or the file \
            ended), 2 on usage errors, 3 when the catalog or file is bad or when the capture \
            device delivered no audio at all (the error names the device and says why), 4 on \
            internal errors.

            Examples:
              earshot listen -c show.earcat
              earshot listen -c show.earcat --device plughw:1,0
              earshot listen -c show.earcat --source file:episode.wav --loop
              earshot listen -c show.earcat --duration 600 --json > matches.jsonl
            """
    )

    @Option(name: [.short, .long], help: ArgumentHelp("The catalog to match against.", valueName: "file.earcat"))
    var catalog: String

    @Option(help: ArgumentHelp("The ALSA capture device (PCM name) to listen to (default: default).", valueName: "pcm"))
    var device: String?

    @Option(help: ArgumentHelp("Listen to an audio file played in real time instead of a device.", valueName: "file:path"))
    var source: String?

    @Flag(help: "With --source, play the file over and over.")
    var loop = false

    @Option(help: ArgumentHelp("Sample rate to ask of the device, in Hz (default 16000; it may choose another).",
                               valueName: "hz"))
    var rate: Int?

    @Option(help: ArgumentHelp("Channels to capture, 1 or 2 (mixed to mono; default 1).", valueName: "n"))
    var channels: Int?

    @Option(help: ArgumentHelp("Stop after this many seconds (default: until interrupted).", valueName: "seconds"))
    var duration: Double?

    @Flag(help: "Print one JSON object per line and result instead of text.")
    var json = false

    /// The ring between capture thread and session. ALSA's file PCM is not paced, so capturing
    /// from one (tests, demos) needs a ring that holds its whole file.
    @Option(name: .customLong("buffer-seconds"), help: ArgumentHelp(
        "Seconds of audio buffered between the capture thread and matching (default 4).", valueName: "seconds",
        visibility: .hidden))
    var bufferSeconds: Double?

    /// Normal scheduling for the capture thread (an unpaced file PCM would spin under SCHED_FIFO).
    @Flag(name: .customLong("no-realtime"), help: ArgumentHelp(
        "Do not ask for SCHED_FIFO priority for the capture thread.", visibility: .hidden))
    var noRealtime = false

    @OptionGroup var quietOption: QuietOption

    func validate() throws {
        if device != nil, source != nil { throw ValidationError("give either --device or --source, not both") }
        if let source {
            guard source.hasPrefix("file:"), source.count > "file:".count else {
                throw ValidationError("--source takes file:<path> (an audio file played in real time), not \"\(source)\"")
            }
            if rate != nil || channels != nil { throw ValidationError("--rate and --channels apply to --device, not to --source") }
        } else if loop {
            throw ValidationError("--loop applies to --source file:<path> only")
        }
        if let device, device.isEmpty { throw ValidationError("--device needs a PCM name (see `earshot devices`)") }
        if let rate, !(8_000...96_000).contains(rate) { throw ValidationError("--rate must be 8000 to 96000 Hz") }
        if let channels, !(1...2).contains(channels) { throw ValidationError("--channels must be 1 or 2") }
        if let duration, !(duration.isFinite && duration > 0) {
            throw ValidationError("--duration must be a positive number of seconds")
        }
        if let bufferSeconds, !(bufferSeconds.isFinite && bufferSeconds > 0 && bufferSeconds <= 600) {
            throw ValidationError("--buffer-seconds must be more than 0 and at most 600")
        }
    }

    func run() throws {
        let mapped = try CatalogFile.map(catalog)
        let kind: ListenSource.Kind
        if let source {
            kind = .file(path: String(source.dropFirst("file:".count)), loop: loop)
        } else {
            let configuration = AlsaCaptureConfiguration(device: device ?? "default", sampleRate: rate ?? 16_000,
                                                         channelCount: channels ?? 1)
            kind = .device(configuration, bufferDuration: bufferSeconds ?? 4, realtimePriority: noRealtime ? nil : 10)
        }
        let listenSource = try ListenSource(kind)
        let output = ListenOutput(json: json, quiet: quietOption.quiet, source: listenSource)
        try Listening(catalog: mapped, source: listenSource, output: output, duration: duration).run()
    }
}

/// One run of `earshot listen`: the session, the tasks that print its results and status, a
/// ticker, the signal handlers and the end. The calling thread blocks until listening ends.
final class Listening: Sendable {
    /// Why listening ended.
    enum End: Sendable, Equatable {
        case signal(Int32)
        case duration
        case fileEnded
    }

    private let catalog: MappedCatalog
    private let source: ListenSource
    private let output: ListenOutput
    private let duration: Double?
    private let queue = DispatchQueue(label: "earshot-listen")
    private let end = Locked<End?>(nil)
    private let ended = DispatchSemaphore(value: 0)

    private struct Ticks {
        /// Most audio the session reported heard.
        var heard = 0.0
        var noteScheduling = true
        var noteParameters = true
    }
    private let ticks = Locked(Ticks())

    init(catalog: MappedCatalog, source: ListenSource, output: ListenOutput, duration: Double?) {
        self.catalog = catalog
        self.source = source
        self.output = output
        self.duration = duration
    }

    func run() throws(CLIFailure) {
        let started = ContinuousClock.now
        let source = self.source, output = self.output
        let session = ManagedSession(catalog: catalog) { source.make() }

        let resultsDone = DispatchSemaphore(value: 0)
        let results = session.results()
        Task.detached { [self] in
            for await delivered in results {
                if case .error = delivered.result, source.fileEnded {
                    stop(.fileEnded)  // the session's "the audio source ended"
                    continue
                }
                output.show(delivered)
            }
            resultsDone.signal()
        }
        let statusUpdates = session.statusUpdates()
        Task.detached { [self] in
            for await status in statusUpdates {
                if status.captureProblem != nil, source.fileEnded {
                    stop(.fileEnded)
                    continue
                }
                // Stopping capture at the end is no problem to report.
                guard !stopping else { continue }
                output.captureProblem(status.captureProblem)
            }
        }

        let ticker = DispatchSource.makeTimerSource(queue: queue)
        ticker.schedule(deadline: .now() + 0.25, repeating: 0.25, leeway: .milliseconds(20))
        ticker.setEventHandler { [self] in tick(session) }
        ticker.resume()
        let signals = StopSignals(queue: queue) { [self] number in stop(.signal(number)) }
        if let duration {
            queue.asyncAfter(deadline: .now() + duration) { [self] in stop(.duration) }
        }

        ended.wait()
        signals.restore()
        ticker.cancel()
        queue.sync {}
        let reason = end.withLock { $0 } ?? .duration
        let last = session.status
        let heard = max(ticks.withLock { $0.heard }, last.heard)
        let captured = heard > 0 || (source.current?.statistics.framesCaptured ?? 0) > 0
        session.cancel()
        _ = resultsDone.wait(timeout: .now() + 5)
        output.finish()
        let elapsed = Double((ContinuousClock.now - started) / .milliseconds(1)) / 1000
        output.message(Self.summary(reason, elapsed: elapsed, heard: heard, counts: output.counts))
        session.shutdown()

        if !captured, reason != .fileEnded {
            let problem = output.lastCaptureProblem ?? last.captureProblem
            let why = problem.map { source.reason($0) } ?? "no audio arrived in \(Format.seconds(elapsed))"
            throw CLIFailure("\(source.label): \(why)", status: .badInput)
        }
    }

    private var stopping: Bool { end.withLock { $0 != nil } }

    /// Ends listening (the first reason wins).
    private func stop(_ reason: End) {
        let first = end.withLock { e -> Bool in
            guard e == nil else { return false }
            e = reason
            return true
        }
        if first { ended.signal() }
    }

    /// Every 0.25 s: the status line, one-time notes about the capture, the end of a file.
    private func tick(_ session: ManagedSession) {
        let status = session.status
        output.refreshStatusLine(status.currentMatch)
        let (noteScheduling, noteParameters) = ticks.withLock { t in
            t.heard = max(t.heard, status.heard)
            return (t.noteScheduling, t.noteParameters)
        }
        if let alsa = source.current as? AlsaAudioSource {
            if noteScheduling, let scheduling = alsa.realtimeScheduling {
                ticks.withLock { $0.noteScheduling = false }
                output.note("capture thread: \(scheduling)")
            }
            if noteParameters, let parameters = alsa.parameters {
                ticks.withLock { $0.noteParameters = false }
                output.note("capturing from \(parameters)")
            }
        }
        if source.fileEnded { stop(.fileEnded) }
    }

    /// "listened 6.00 s (--duration): heard 5.98 s of audio; 1 match, 4 repeats, 1 no match, 0 errors".
    static func summary(_ reason: End, elapsed: Double, heard: Double, counts: ListenOutput.Counts) -> String {
        let why = switch reason {
        case .signal(let number): number == SIGINT ? "interrupted" : "terminated"
        case .duration: "--duration"
        case .fileEnded: "end of the file"
        }
        func count(_ n: Int, _ one: String, _ many: String) -> String { "\(n) \(n == 1 ? one : many)" }
        return "listened \(Format.seconds(elapsed)) (\(why)): heard \(Format.seconds(heard)) of audio; "
            + [count(counts.matches, "match", "matches"), count(counts.repeats, "repeat", "repeats"),
               count(counts.noMatches, "no match", "no matches"), count(counts.errors, "error", "errors")]
            .joined(separator: ", ")
    }
}
