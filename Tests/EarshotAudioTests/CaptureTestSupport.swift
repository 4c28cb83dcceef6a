import EarshotAudio
import EarshotTestSupport
import Foundation

/// Helpers for driving an `AudioSource` the way a consumer does.
enum SourceDriver {
    /// Reads until `count` samples have arrived or `timeout` seconds have passed.
    static func collect(_ source: any AudioSource, count: Int, timeout: Double = 10) -> [Float] {
        var out: [Float] = []
        out.reserveCapacity(count)
        var buffer = [Float](repeating: 0, count: 4096)
        let deadline = Date().addingTimeInterval(timeout)
        while out.count < count && Date() < deadline {
            _ = source.waitForSamples(timeout: 0.05)
            let wanted = min(buffer.count, count - out.count)
            let n = buffer.withUnsafeMutableBufferPointer {
                source.read(into: UnsafeMutableBufferPointer(rebasing: $0[0..<wanted]))
            }
            out += buffer[0..<n]
            if n == 0 {
                switch source.state {
                case .finished, .failed, .stopped: return out  // nothing more will come
                default: break
                }
            }
        }
        return out
    }

    /// Reads everything until the source reports `.finished` and has nothing left.
    static func drain(_ source: any AudioSource, timeout: Double = 10) -> [Float] {
        var out: [Float] = []
        var buffer = [Float](repeating: 0, count: 4096)
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            _ = source.waitForSamples(timeout: 0.05)
            let n = buffer.withUnsafeMutableBufferPointer { source.read(into: $0) }
            out += buffer[0..<n]
            if n == 0, case .finished = source.state { break }
            if n == 0, case .failed = source.state { break }
        }
        return out
    }

    /// The calling thread's id, from /proc/thread-self (a link to "PID/task/TID").
    static func currentThreadID() -> String? {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self"))?.split(separator: "/").last.map(String.init)
    }

    /// Whether thread `id` of this process sleeps (state S in /proc: blocked in a wait).
    static func isAsleep(thread id: String) -> Bool {
        guard let stat = ProcFile.text("/proc/self/task/\(id)/stat"), let end = stat.range(of: ") ", options: .backwards) else { return false }
        return stat[end.upperBound...].hasPrefix("S")
    }

    /// The names of this process's threads, from /proc.
    static func threadNames() -> [String] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { task in
            (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }
}

extension AudioSourceState {
    var isFailed: Bool {
        if case .failed = self { return true }
        return false
    }

    var failureMessage: String? {
        if case .failed(let error) = self { return error.message }
        return nil
    }
}
