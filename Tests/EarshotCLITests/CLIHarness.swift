import EarshotCore
import EarshotTestSupport
import Foundation
import Testing

/// Runs the built `earshot` executable as a subprocess.
enum CLIHarness {
    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String

        /// The stderr lines that are error messages (progress lines and notes are not).
        var errorLines: [String] { stderr.split(separator: "\n").map(String.init).filter { $0.hasPrefix("earshot:") } }
    }

    struct MissingExecutable: Error, CustomStringConvertible {
        var searched: [String]
        var description: String {
            "the earshot executable was not found (looked at \(searched.joined(separator: ", "))); "
                + "build it first with `swift build` (`swift test` builds it too), or set EARSHOT_CLI to its path"
        }
    }

    /// The executable: $EARSHOT_CLI, else next to the test bundle (the products folder), else
    /// `.build/debug/earshot` under the package root.
    static func executable() throws -> String {
        var candidates: [String] = []
        if let explicit = ProcessInfo.processInfo.environment["EARSHOT_CLI"] { candidates.append(explicit) }
        if let bundle = Bundle.main.executableURL?.deletingLastPathComponent() {
            candidates.append(bundle.appendingPathComponent("earshot").path)
        }
        candidates.append(Repository.root.appendingPathComponent(".build/debug/earshot").path)
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw MissingExecutable(searched: candidates)
        }
        return found
    }

    struct TimedOut: Error, CustomStringConvertible {
        var arguments: [String]
        var seconds: Double
        var description: String { "earshot \(arguments.joined(separator: " ")) still ran after \(seconds) s; killed" }
    }

    /// Runs `earshot arguments…` in `directory` and collects its exit status and output.
    ///
    /// - Parameters:
    ///   - environment: variables set for the child on top of this process's environment.
    ///   - signal: sends this signal (e.g. SIGINT) to the child `after` seconds, as a user
    ///     pressing Ctrl-C would.
    ///   - timeout: seconds after which a child still running is killed and `TimedOut` thrown,
    ///     so a command that hangs fails its test instead of stalling the run.
    static func run(
        _ arguments: [String], in directory: URL, environment: [String: String] = [:],
        signal: (number: Int32, after: Double)? = nil, timeout: Double = 120
    ) throws -> Run {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try executable())
        process.arguments = arguments
        process.currentDirectoryURL = directory
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        }
        // Output goes to files, not pipes: a full pipe would block the child while we wait.
        let logs = try TemporaryDirectory("earshot-cli")
        let out = logs.url("stdout"), err = logs.url("stderr")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        let outHandle = try FileHandle(forWritingTo: out), errHandle = try FileHandle(forWritingTo: err)
        process.standardOutput = outHandle
        process.standardError = errHandle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let started = ContinuousClock.now
        var signalled = signal == nil
        while process.isRunning {
            let elapsed = Double((ContinuousClock.now - started) / .milliseconds(1)) / 1000
            if !signalled, let signal, elapsed >= signal.after {
                kill(process.processIdentifier, signal.number)
                signalled = true
            }
            if elapsed >= timeout {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                throw TimedOut(arguments: arguments, seconds: timeout)
            }
            usleep(10_000)
        }
        process.waitUntilExit()
        try outHandle.close()
        try errHandle.close()
        return Run(status: process.terminationStatus,
                   stdout: String(decoding: try Data(contentsOf: out), as: UTF8.self),
                   stderr: String(decoding: try Data(contentsOf: err), as: UTF8.self))
    }
}

/// A test's folder is its working directory for `earshot`.
extension TemporaryDirectory {
    func copy(_ name: String, from other: TemporaryDirectory, as newName: String? = nil) throws {
        try FileManager.default.copyItem(atPath: other.path(name), toPath: path(newName ?? name))
    }

    /// Runs `earshot` with this folder as the working directory.
    @discardableResult
    func earshot(_ arguments: String...) throws -> CLIHarness.Run { try CLIHarness.run(arguments, in: url) }

    func earshot(arguments: [String]) throws -> CLIHarness.Run { try CLIHarness.run(arguments, in: url) }

    /// Runs `earshot` here with extra environment variables, an optional signal and a timeout
    /// (see `CLIHarness.run`).
    func earshot(
        _ arguments: [String], environment: [String: String] = [:], signal: (number: Int32, after: Double)? = nil,
        timeout: Double = 60
    ) throws -> CLIHarness.Run {
        try CLIHarness.run(arguments, in: url, environment: environment, signal: signal, timeout: timeout)
    }
}

extension JSONValue {
    /// Object member, or nil.
    subscript(key: String) -> JSONValue? {
        if case .object(let o) = self { return o[key] }
        return nil
    }

    /// Array element, or nil.
    subscript(index: Int) -> JSONValue? {
        if case .array(let a) = self, a.indices.contains(index) { return a[index] }
        return nil
    }

    var double: Double? {
        if case .number(let n) = self { return n }
        return nil
    }

    var string: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    var bool: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    var array: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    /// Parses JSON text (a command's `--json` output).
    static func parse(_ text: String) throws -> JSONValue {
        try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
    }
}
