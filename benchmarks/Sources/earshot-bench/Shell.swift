import Foundation

enum Shell {
    /// The absolute path of `tool` on PATH, if installed.
    static func which(_ tool: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for dir in path.split(separator: ":") {
            let candidate = "\(dir)/\(tool)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// Runs a program and returns its exit status and standard output; standard error is
    /// returned too for error messages.
    @discardableResult
    static func run(_ executable: String, _ arguments: [String], directory: String? = nil) throws
        -> (status: Int32, output: String, error: String)
    {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Read before waiting so a chatty child cannot fill the pipe and block.
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: outData, as: UTF8.self),
                String(decoding: errData, as: UTF8.self))
    }

    /// Output of a command, trimmed, or nil when it fails.
    static func capture(_ tool: String, _ arguments: [String], directory: String? = nil) -> String? {
        guard let exe = which(tool), let r = try? run(exe, arguments, directory: directory), r.status == 0 else {
            return nil
        }
        return r.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
