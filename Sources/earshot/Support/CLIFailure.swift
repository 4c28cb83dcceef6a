import EarshotCore
import EarshotSystem

/// The exit statuses of `earshot` (documented in `earshot --help`).
enum ExitStatus: Int32 {
    case success = 0
    /// `match` ran and found nothing.
    case noMatch = 1
    /// Bad or missing arguments.
    case usage = 2
    /// An input file is missing, unreadable, malformed, corrupt or foreign; or (`listen`) the
    /// capture device delivered no audio at all.
    case badInput = 3
    /// A bug, or the output could not be written.
    case internalFailure = 4
    /// `remote`: the daemon did not answer, refused the key, or answered with an error status;
    /// or a push was interrupted.
    case remote = 5
}

/// A failure that ends the command: one line for stderr (without the `earshot: ` prefix) and
/// the exit status.
struct CLIFailure: Error {
    var message: String
    var status: ExitStatus

    init(_ message: String, status: ExitStatus) {
        self.message = Terminal.oneLine(message)
        self.status = status
    }

    /// `file`'s content is at fault.
    static func badInput(_ file: String, _ error: EarshotError) -> CLIFailure {
        CLIFailure(naming(file, error.message), status: .badInput)
    }

    /// `file`'s content is at fault.
    static func badInput(_ file: String, _ problem: String) -> CLIFailure {
        CLIFailure(naming(file, problem), status: .badInput)
    }

    /// `file` cannot be read (the system's error).
    static func badInput(_ file: String, _ error: SystemError) -> CLIFailure {
        CLIFailure(naming(file, error.message), status: .badInput)
    }

    /// An argument names something that is not there (a reference index, a media-item id).
    static func usage(_ file: String, _ problem: String) -> CLIFailure {
        CLIFailure(naming(file, problem), status: .usage)
    }

    /// `file` could not be written.
    static func output(_ file: String, _ error: EarshotError) -> CLIFailure {
        CLIFailure(naming(file, error.message), status: .internalFailure)
    }

    /// `file` could not be written (the system's error).
    static func output(_ file: String, _ error: SystemError) -> CLIFailure {
        CLIFailure(naming(file, error.message), status: .internalFailure)
    }

    /// Puts the file name in front unless the core already did.
    private static func naming(_ file: String, _ message: String) -> String {
        file.isEmpty || message.hasPrefix(file + ":") ? message : "\(file): \(message)"
    }
}
