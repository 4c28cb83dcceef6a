import Foundation

/// Runs a program the tests use as is (ffmpeg, chromium), collecting what it printed.
public enum ExternalTool {
    /// What a run left: exit status, standard output, standard error.
    public struct Run: Sendable {
        public let status: Int32
        public let output: Data
        public let errors: String
    }

    /// Runs `executable` with `arguments` to its end. Standard error goes to a file, so that a
    /// program writing much of it never stalls on a full pipe while its output is read.
    public static func run(_ executable: String, _ arguments: [String]) throws -> Run {
        let scratch = try TemporaryDirectory("earshot-tool")
        let errorsFile = scratch.path("stderr")
        _ = FileManager.default.createFile(atPath: errorsFile, contents: nil)
        let errors = try FileHandle(forWritingTo: URL(fileURLWithPath: errorsFile))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let output = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try errors.close()
        return Run(status: process.terminationStatus, output: output,
                   errors: String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: errorsFile))) ?? Data(), as: UTF8.self))
    }
}
