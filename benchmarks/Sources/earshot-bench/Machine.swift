import Foundation

enum Machine {
    static var architecture: String { Shell.capture("uname", ["-m"]) ?? "unknown" }
    static var cores: Int { ProcessInfo.processInfo.activeProcessorCount }

    static var cpuModel: String {
        guard let text = ProcStatus.read("/proc/cpuinfo") else { return "unknown" }
        for line in text.split(separator: "\n") where line.hasPrefix("model name") {
            if let colon = line.firstIndex(of: ":") {
                return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        return "unknown"
    }

    static var os: String {
        guard let text = try? String(contentsOfFile: "/etc/os-release", encoding: .utf8) else { return "Linux" }
        for line in text.split(separator: "\n") where line.hasPrefix("PRETTY_NAME=") {
            return line.dropFirst("PRETTY_NAME=".count).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        }
        return "Linux"
    }

    static var memory: String {
        guard let text = ProcStatus.read("/proc/meminfo") else { return "?" }
        for line in text.split(separator: "\n") where line.hasPrefix("MemTotal:") {
            let kb = Double(line.filter { $0.isNumber }) ?? 0
            return String(format: "%.1f GB RAM", kb / 1024 / 1024)
        }
        return "?"
    }

    static var swiftVersion: String {
        let v = Shell.capture("swift", ["--version"]) ?? ""
        return v.split(separator: "\n").first.map(String.init) ?? "unknown"
    }

    /// Short commit hash, marked when the work tree has uncommitted changes to tracked files.
    static func commit(root: String) -> String {
        guard let hash = Shell.capture("git", ["rev-parse", "--short", "HEAD"], directory: root) else {
            return "unknown (not a git checkout)"
        }
        // "XY path" per line: two status columns, a blank, the path. Not `capture`: its trimming
        // would take the first line's leading blank (" M path") and shift the path.
        let git = Shell.which("git").flatMap { try? Shell.run($0, ["status", "--porcelain", "--untracked-files=all"], directory: root) }
        let status = git?.status == 0 ? git!.output : ""
        // Changed or new files that can change what is measured (the benchmark's own are listed apart).
        let files = status.split(separator: "\n").map { String($0.dropFirst(3)) }
            .filter { $0.hasPrefix("Sources/") || $0 == "Package.swift" || $0.hasPrefix("benchmarks/Sources/") }
        let product = files.filter { !$0.hasPrefix("benchmarks/") }
        if product.isEmpty {
            return files.isEmpty ? hash : "\(hash) (benchmark code not yet committed)"
        }
        return "\(hash) + uncommitted changes to \(product.count) source file(s)"
    }

    static func executablePath() -> String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }
}
