import EarshotCore
import EarshotSync

/// What `earshot listen` prints. Results, capture problems and the ticker arrive from different
/// threads; one lock keeps their lines whole and in order, and the in-place status line clear of
/// the others.
///
/// Text: a line per new match, lost match, first "no match" and error. On a terminal, repeats of
/// the current match only refresh a status line kept below the others ("\r"); off a terminal
/// (logs, pipes, tests) each repeat is a line of its own starting with "repeat:". JSON: one
/// object per result and line, repeats included.
final class ListenOutput: Sendable {
    struct Counts: Sendable {
        var matches = 0
        var repeats = 0
        var noMatches = 0
        var errors = 0
    }

    private struct State {
        var counts = Counts()
        /// The item of the last match shown, until it is lost.
        var current: MatchedMediaItem?
        var statusLineOpen = false
        /// The capture problem shown last; nil once it cleared.
        var problem: String?
        /// The last capture problem seen, kept after it clears.
        var lastProblem: String?
    }

    private let state = Locked(State())
    private let json: Bool
    private let quiet: Bool
    /// Repeats refresh a status line instead of printing lines.
    private let inPlace: Bool
    private let source: ListenSource

    init(json: Bool, quiet: Bool, source: ListenSource) {
        self.json = json
        self.quiet = quiet
        self.source = source
        inPlace = !json && Terminal.stdoutIsTerminal
    }

    var counts: Counts { state.withLock { $0.counts } }

    /// The last capture problem reported, even if it has cleared since.
    var lastCaptureProblem: String? { state.withLock { $0.lastProblem } }

    // MARK: Results

    /// Prints one result of the session's `results` sequence.
    func show(_ delivered: StreamingResult) {
        state.withLock { s in
            switch delivered.result {
            case .match(let items):
                if delivered.isRepeat { s.counts.repeats += 1 } else { s.counts.matches += 1 }
                s.current = items[0]
                if json {
                    emit(jsonLine(delivered, items: items), &s)
                } else if !delivered.isRepeat {
                    emit(Self.line("match", items), &s)
                } else if !inPlace {
                    emit(Self.line("repeat", items), &s)
                }
            case .noMatch:
                s.counts.noMatches += 1
                let lost = s.current
                s.current = nil
                if json {
                    var object = jsonObject(delivered, items: [])
                    if let lost { object["lost"] = .string(lost.mediaItem.id) }
                    emit(Format.jsonLine(.object(object)), &s)
                } else if let lost {
                    emit("no match (lost \(Format.name(of: lost.mediaItem)) [id \(lost.mediaItem.id)])", &s)
                } else {
                    emit("no match", &s)
                }
            case .error(let error):
                // A capture failure also shows as a capture problem (`captureProblem(_:)`),
                // once; only JSON readers get it as a result too.
                let captureFailure = error.message.hasPrefix(Self.captureFailurePrefix)
                if !captureFailure { s.counts.errors += 1 }
                if json {
                    var object = jsonObject(delivered, items: [])
                    object["error"] = .string(error.message)
                    emit(Format.jsonLine(.object(object)), &s)
                }
                if !captureFailure { emitError("earshot: " + Terminal.oneLine(error.message), &s) }
            }
        }
    }

    /// How the session words a result error that a capture failure caused.
    static let captureFailurePrefix = "audio capture failed: "

    /// "match: Episode 2 [id ep2, reference 1] at 23.45 s, frequency skew +0.01 %, confidence 0.91".
    static func line(_ kind: String, _ items: [MatchedMediaItem]) -> String {
        let top = items[0]
        var text = "\(kind): \(Format.name(of: top.mediaItem)) [id \(top.mediaItem.id), reference \(top.referenceIndex)] "
            + "at \(Format.seconds(top.predictedCurrentMatchOffset)), frequency skew \(Format.percent(top.frequencySkew)), "
            + "confidence \(String(format: "%.2f", top.confidence))"
        // A repeated section lists the same reference at its other places; other items are named.
        let others = items.dropFirst()
        let places = others.filter { $0.hasSameReference(as: top) }.map { Format.seconds($0.predictedCurrentMatchOffset) }
        var ids: [String] = []
        for m in others where !m.hasSameReference(as: top) && !ids.contains(m.mediaItem.id) { ids.append(m.mediaItem.id) }
        if !places.isEmpty { text += " (or at \(places.joined(separator: ", ")): a repeated section)" }
        if !ids.isEmpty { text += " (also \(ids.joined(separator: ", ")))" }
        return text
    }

    private func jsonObject(_ delivered: StreamingResult, items: [MatchedMediaItem]) -> [String: JSONValue] {
        let kind = switch delivered.result {
        case .match: "match"
        case .noMatch: "noMatch"
        case .error: "error"
        }
        return [
            "result": .string(kind),
            "repeat": .bool(delivered.isRepeat),
            "streamTime": .number(delivered.streamTime),
            "items": .array(items.map(MatchCommand.json)),
        ]
    }

    private func jsonLine(_ delivered: StreamingResult, items: [MatchedMediaItem]) -> String {
        Format.jsonLine(.object(jsonObject(delivered, items: items)))
    }

    // MARK: Capture problems and notes

    /// The session's capture problem now (nil: capture delivers). Prints a change: the
    /// problem when it appears (an error line; capture is retried), a note when it clears.
    func captureProblem(_ problem: String?) {
        state.withLock { s in
            guard problem != s.problem else { return }
            let previous = s.problem
            s.problem = problem
            if let problem {
                s.lastProblem = problem
                emitError("earshot: \(source.label): \(Terminal.oneLine(source.reason(problem))) (retrying)", &s)
            } else if previous != nil, !quiet {
                emitError("note: \(source.label): capturing again", &s)
            }
        }
    }

    /// A note on stderr ("note: …"), unless --quiet.
    func note(_ text: String) {
        guard !quiet else { return }
        state.withLock { s in emitError("note: " + text, &s) }
    }

    /// A line on stderr that is not a note: the closing summary.
    func message(_ text: String) {
        state.withLock { s in emitError(text, &s) }
    }

    // MARK: Status line

    /// On a terminal, rewrites the status line with `current` (the session's current match,
    /// its offset moved on to now); clears it when there is none.
    func refreshStatusLine(_ current: MatchedMediaItem?) {
        guard inPlace else { return }
        state.withLock { s in
            guard s.current != nil, let current else {
                closeStatusLine(&s)
                return
            }
            let text = "now: \(Format.name(of: current.mediaItem)) [id \(current.mediaItem.id)] "
                + "at \(Format.seconds(current.predictedCurrentMatchOffset)), frequency skew \(Format.percent(current.frequencySkew))"
            Terminal.outputRaw("\r\u{1B}[K" + text)
            s.statusLineOpen = true
        }
    }

    /// Clears the status line, so that what follows starts on a clean line.
    func finish() {
        state.withLock { closeStatusLine(&$0) }
    }

    // MARK: Writing (under the lock)

    private func emit(_ line: String, _ s: inout State) {
        closeStatusLine(&s)
        Terminal.outputRaw(line + "\n")
    }

    private func emitError(_ line: String, _ s: inout State) {
        closeStatusLine(&s)
        Terminal.error(line)
    }

    private func closeStatusLine(_ s: inout State) {
        guard s.statusLineOpen else { return }
        Terminal.outputRaw("\r\u{1B}[K")
        s.statusLineOpen = false
    }
}
