import EarshotTestSupport
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

// Small helpers: clocks, statistics, /proc readings, child processes, WAV files, formatting.

enum Clock {
    /// Monotonic wall-clock seconds.
    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
    }

    /// CPU seconds used by the calling thread.
    static func threadCPU() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

enum Stats {
    /// Nearest-rank percentile (p in 0…100) of unsorted values; nil when empty.
    static func percentile(_ values: [Double], _ p: Double) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let rank = Int((p / 100 * Double(sorted.count)).rounded(.up))
        return sorted[max(0, min(sorted.count - 1, rank - 1))]
    }

    static func median(_ values: [Double]) -> Double? {
        guard !values.isEmpty else { return nil }
        let s = values.sorted()
        return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
    }
}

/// Values of /proc/self/status (kB), e.g. VmRSS, VmHWM, RssAnon, RssFile.
enum ProcStatus {
    /// The whole text of a /proc file (see `ProcFile`).
    static func read(_ path: String) -> String? { ProcFile.text(path) }

    static func kilobytes(_ field: String, pid: Int32? = nil) -> Int? {
        guard let text = read(pid.map { "/proc/\($0)/status" } ?? "/proc/self/status") else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
            let digits = line.dropFirst(field.count + 1).filter { $0.isNumber }
            return Int(digits)
        }
        return nil
    }

    static func megabytes(_ field: String, pid: Int32? = nil) -> Double? { kilobytes(field, pid: pid).map { Double($0) / 1024 } }

    /// Resident kB of this process's mappings of the file at `path` (/proc/self/smaps).
    static func mappedKilobytes(of path: String) -> Int? {
        guard let resolved = realpath(path, nil) else { return nil }
        let target = String(cString: resolved)
        free(resolved)
        guard let text = read("/proc/self/smaps") else { return nil }
        var inside = false, total = 0
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let first = fields.first else { continue }
            if first.contains("-"), first.allSatisfy({ $0.isHexDigit || $0 == "-" }) {
                inside = fields.count >= 6 && fields[5...].joined(separator: " ") == target
            } else if inside, first == "Rss:", fields.count >= 2, let kb = Int(fields[1]) {
                total += kb
            }
        }
        return total
    }
}

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

enum WAV {
    /// Writes mono 16-bit PCM (samples clipped to ±1).
    static func write(_ samples: [Float], sampleRate: Int, to path: String) throws {
        var d = Data()
        func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { d.append(contentsOf: $0) } }
        func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { d.append(contentsOf: $0) } }
        let dataBytes = UInt32(samples.count * 2)
        d.append(contentsOf: Array("RIFF".utf8)); u32(36 + dataBytes)
        d.append(contentsOf: Array("WAVE".utf8))
        d.append(contentsOf: Array("fmt ".utf8)); u32(16); u16(1); u16(1)
        u32(UInt32(sampleRate)); u32(UInt32(sampleRate * 2)); u16(2); u16(16)
        d.append(contentsOf: Array("data".utf8)); u32(dataBytes)
        d.reserveCapacity(d.count + samples.count * 2)
        for s in samples {
            let v = Int16(max(-32768, min(32767, (Double(s) * 32768).rounded())))
            u16(UInt16(bitPattern: v))
        }
        try d.write(to: URL(fileURLWithPath: path))
    }
}

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

/// Mixes integers into a 64-bit seed (SplitMix-style) so every query gets its own stream.
func deriveSeed(_ parts: UInt64...) -> UInt64 {
    var h: UInt64 = 0x243F_6A88_85A3_08D3
    for p in parts {
        h ^= p &+ 0x9E37_79B9_7F4A_7C15 &+ (h << 6) &+ (h >> 2)
        h = (h ^ (h >> 31)) &* 0xBF58_476D_1CE4_E5B9
    }
    return h
}

enum Fmt {
    static func f(_ v: Double?, _ digits: Int = 1) -> String {
        guard let v, v.isFinite else { return "—" }
        return String(format: "%.\(digits)f", v)
    }

    static func pct(_ num: Int, _ den: Int, _ digits: Int = 1) -> String {
        den == 0 ? "—" : String(format: "%.\(digits)f %%", 100 * Double(num) / Double(den))
    }

    static func bytes(_ n: Int) -> String {
        if n >= 1 << 30 { return String(format: "%.2f GB", Double(n) / Double(1 << 30)) }
        if n >= 1 << 20 { return String(format: "%.1f MB", Double(n) / Double(1 << 20)) }
        if n >= 1 << 10 { return String(format: "%.1f kB", Double(n) / Double(1 << 10)) }
        return "\(n) B"
    }

    static func duration(_ seconds: Double) -> String {
        seconds >= 3600 ? String(format: "%.2f h", seconds / 3600) : String(format: "%.1f min", seconds / 60)
    }

    static func passFail(_ ok: Bool?) -> String {
        switch ok {
        case .some(true): "PASS"
        case .some(false): "**FAIL**"
        case .none: "n/a"
        }
    }
}

/// Prints a line immediately (stdout may be a pipe).
func say(_ text: String = "") {
    print(text)
    fflush(nil)
}

/// The kernel's count of connections dropped because a listening socket's queue was full
/// (`TcpExt ListenOverflows`, all sockets of the machine): a client whose connection was dropped
/// tries again after TCP's first retransmission timeout, a second.
enum ListenQueue {
    static func overflows() -> Int? {
        guard let text = ProcStatus.read("/proc/net/netstat") else { return nil }
        let lines = text.split(separator: "\n")
        for (names, values) in zip(lines, lines.dropFirst()) where names.hasPrefix("TcpExt:") && values.hasPrefix("TcpExt:") {
            let keys = names.split(separator: " "), numbers = values.split(separator: " ")
            guard let index = keys.firstIndex(of: "ListenOverflows"), index < numbers.count else { return nil }
            return Int(numbers[index])
        }
        return nil
    }
}
