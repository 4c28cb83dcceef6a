import EarshotSync

/// Progress of a multi-file job on stderr. On a terminal one line is rewritten in place
/// ("\r"): files done, the share of the whole job, the file last heard from; otherwise (logs,
/// pipes) each finished file gets its own line. `quiet` silences it. Files may be worked on
/// concurrently: every call is safe from any thread.
final class ProgressLine: Sendable {
    private struct State {
        /// How far each file is (0…1).
        var fractions: [Double]
        var finished = 0
        var shownPercent = -1
        var lineOpen = false
    }

    private let total: Int
    private let quiet: Bool
    private let inPlace = Terminal.stderrIsTerminal
    private let state: Locked<State>

    init(total: Int, quiet: Bool) {
        self.total = total
        self.quiet = quiet
        state = Locked(State(fractions: [Double](repeating: 0, count: max(0, total))))
    }

    /// File `index` (0-based) named `name` is `fraction` (0…1) done.
    func update(_ index: Int, _ name: String, fraction: Double) {
        guard !quiet, inPlace, total > 0 else { return }
        state.withLock { s in
            s.fractions[index] = min(1, max(0, fraction))
            let percent = Int(s.fractions.reduce(0, +) / Double(total) * 100)
            // Redraw only when the number changes: a terminal write per decoded block would cost more than the work.
            guard percent != s.shownPercent else { return }
            s.shownPercent = percent
            Terminal.errorRaw("\r\u{1B}[K[\(s.finished)/\(total)] \(percent)% \(name)")
            s.lineOpen = true
        }
    }

    /// File `index` is done; `detail` says what came out of it. Off a terminal the line names the
    /// file by its place among the inputs (files done at once may finish out of order).
    func finished(_ index: Int, _ name: String, detail: String) {
        guard !quiet else { return }
        state.withLock { $0.finished += 1 }
        if inPlace {
            update(index, name, fraction: 1)
        } else {
            Terminal.error("[\(index + 1)/\(total)] \(name): \(detail)")
        }
    }

    /// Clears the in-place line so later output (results, errors) starts on a clean line.
    func end() {
        state.withLock { s in
            guard s.lineOpen else { return }
            Terminal.errorRaw("\r\u{1B}[K")
            s.lineOpen = false
        }
    }
}
