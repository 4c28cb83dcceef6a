import EarshotAudio
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Where messages for people go: results on stdout, errors, notes and progress on stderr.
enum Terminal {
    /// Writes `text` and a line break to stderr (the real one: see `StandardErrorSilencer`).
    static func error(_ text: String) {
        StandardErrorSilencer.write(text + "\n")
    }

    /// Writes `text` to stderr as is (for progress lines rewritten with "\r").
    static func errorRaw(_ text: String) {
        StandardErrorSilencer.write(text)
    }

    /// Writes `text` to stdout as is and at once (for status lines rewritten with "\r"), in
    /// order with `print`'s lines.
    static func outputRaw(_ text: String) {
        var text = text
        text.withUTF8 { StandardOutput.write($0) }
    }

    /// True when stderr is a terminal, so a progress line can be rewritten in place.
    static var stderrIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }

    /// True when stdout is a terminal, so a status line can be rewritten in place.
    static var stdoutIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }

    /// Error messages are one line; some core messages embed multi-line descriptions.
    static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
    }
}
