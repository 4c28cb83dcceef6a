import EarshotTestSupport
import Foundation
import Testing

extension TemporaryDirectory {
    /// Copies the first `count` bytes of the file at `source` to a new file called `name`.
    func truncatedCopy(of source: String, keeping count: Int, to name: String) throws -> String {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: source)).prefix(count)
        return try write(name, Array(bytes))
    }

    /// A 44.1 kHz sine of `seconds` written as `fileName` (its format from the extension), and a
    /// copy of its first `count` bytes, named "cut-" + `fileName`, whose path is returned.
    func cutSine(_ fileName: String, seconds: Double, keeping count: Int) throws -> String {
        let whole = path(fileName)
        try Sox.sine(to: whole, seconds: seconds, rate: 44_100)
        return try truncatedCopy(of: whole, keeping: count, to: "cut-\(fileName)")
    }
}

/// The `sox` command-line tool, which makes the test fixtures.
enum Sox {
    static let executable = "/usr/bin/sox"

    /// Runs sox; a missing sox fails the test (CI installs it) rather than skipping it.
    static func run(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: executable),
            "sox is required at \(executable) to generate audio fixtures (apt-get install sox libsox-fmt-all)",
            sourceLocation: sourceLocation)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let stderr = Pipe()
        process.standardError = stderr
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let messages = stderr.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try #require(
            process.terminationStatus == 0,
            "sox \(arguments.joined(separator: " ")) failed: \(String(decoding: messages, as: UTF8.self))",
            sourceLocation: sourceLocation)
    }

    /// Writes an undithered sine of amplitude 0.5 to `path`. With several channels, `frequencies`
    /// gives one tone per channel; `phases` (in percent of a period) shifts each.
    static func sine(
        to path: String, frequencies: [Double] = [1000], phases: [Double]? = nil, seconds: Double = 1,
        rate: Int, options: [String] = [], sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        var synth = ["synth", "\(seconds)"]
        for (i, frequency) in frequencies.enumerated() {
            synth += ["sine", "\(frequency)"]
            if let phases { synth += ["0", "\(phases[i])"] }
        }
        try run(
            ["-D", "-n", "-r", "\(rate)", "-c", "\(frequencies.count)"] + options + [path] + synth + ["vol", "0.5"],
            sourceLocation: sourceLocation)
    }
}

/// Measurements of test signals.
enum Signal {
    /// `count` samples of a sine.
    static func sine(frequency: Double, rate: Double, count: Int, amplitude: Double = 0.5) -> [Float] {
        (0..<count).map { Float(amplitude * sin(2 * .pi * frequency * Double($0) / rate)) }
    }

    /// Channel `index` of interleaved samples.
    static func channel(_ index: Int, of samples: [Float], channels: Int) -> [Float] {
        stride(from: index, to: samples.count, by: channels).map { samples[$0] }
    }

    /// `samples` without `seconds` at each end, where codec delay and filter edges live.
    static func middle(_ samples: [Float], rate: Double, trimming seconds: Double = 0.1) -> [Float] {
        let cut = Int(seconds * rate)
        guard samples.count > 2 * cut else { return [] }
        return Array(samples[cut..<(samples.count - cut)])
    }

    /// The frequency of a tone from its rising zero crossings, interpolated between samples.
    static func zeroCrossingFrequency(_ samples: [Float], rate: Double) -> Double {
        var first: Double?
        var last = 0.0
        var crossings = 0
        for i in 1..<max(1, samples.count) where samples[i - 1] < 0 && samples[i] >= 0 {
            let a = Double(samples[i - 1])
            let b = Double(samples[i])
            let t = (Double(i - 1) + a / (a - b)) / rate
            if first == nil { first = t }
            last = t
            crossings += 1
        }
        guard let first, crossings > 1, last > first else { return 0 }
        return Double(crossings - 1) / (last - first)
    }

    /// The amplitude of the component at `frequency` (one DFT bin).
    static func amplitude(_ samples: [Float], at frequency: Double, rate: Double) -> Double {
        var re = 0.0
        var im = 0.0
        for (n, x) in samples.enumerated() {
            let phase = 2 * .pi * frequency * Double(n) / rate
            re += Double(x) * cos(phase)
            im -= Double(x) * sin(phase)
        }
        return 2 * (re * re + im * im).squareRoot() / Double(max(1, samples.count))
    }

    static func rms(_ samples: [Float]) -> Double {
        let sum = samples.reduce(0.0) { $0 + Double($1) * Double($1) }
        return (sum / Double(max(1, samples.count))).squareRoot()
    }

    /// Reproducible noise bytes (xorshift), so a failure can be replayed.
    static func pseudoRandomBytes(count: Int, seed: UInt64 = 0x9E37_79B9_7F4A_7C15) -> [UInt8] {
        var state = seed
        return (0..<count).map { _ in
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return UInt8(truncatingIfNeeded: state >> 24)
        }
    }
}
