/// Progress of a multi-file job on stderr. On a terminal one line is rewritten in place
/// ("\r"); otherwise (logs, pipes) each finished file gets its own line. `quiet` silences it.
final class ProgressLine {
    private let total: Int
    private let quiet: Bool
    private let inPlace = Terminal.stderrIsTerminal
    private var shownPercent = -1
    private var lineOpen = false

    init(total: Int, quiet: Bool) {
        self.total = total
        self.quiet = quiet
    }

    /// File `index` (0-based) named `name` is `fraction` (0…1) done.
    func update(_ index: Int, _ name: String, fraction: Double) {
        guard !quiet, inPlace, total > 0 else { return }
        let percent = Int((Double(index) + min(1, max(0, fraction))) / Double(total) * 100)
        // Redraw only when the number changes: a terminal write per decoded block would cost more than the work.
        guard percent != shownPercent else { return }
        shownPercent = percent
        Terminal.errorRaw("\r\u{1B}[K[\(index + 1)/\(total)] \(percent)% \(name)")
        lineOpen = true
    }

    /// File `index` is done; `detail` says what came out of it.
    func finished(_ index: Int, _ name: String, detail: String) {
        guard !quiet else { return }
        if inPlace {
            update(index, name, fraction: 1)
        } else {
            Terminal.error("[\(index + 1)/\(total)] \(name): \(detail)")
        }
    }

    /// Clears the in-place line so later output (results, errors) starts on a clean line.
    func end() {
        guard lineOpen else { return }
        Terminal.errorRaw("\r\u{1B}[K")
        lineOpen = false
    }
}
