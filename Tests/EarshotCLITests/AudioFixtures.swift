import EarshotTestSupport
import Foundation
import Testing

/// Synthetic recordings for the CLI tests, written as WAV files.
enum AudioFixtures {
    static let sampleRate = 16_000

    /// `duration` seconds of the synthetic recording `seed`.
    static func music(seed: UInt64, duration: Double) -> [Float] {
        SyntheticMusic.make(seed: seed, duration: duration, sampleRate: Double(sampleRate))
    }

    /// Writes `duration` seconds of recording `seed` to `name` in `workspace`.
    static func writeWAV(_ name: String, seed: UInt64, duration: Double, in workspace: TemporaryDirectory) throws {
        try workspace.write(name, WAVFile.bytes(music(seed: seed, duration: duration)))
    }

    /// Writes seconds `from..<from+length` of `samples` to `name`.
    static func writeExcerpt(_ name: String, of samples: [Float], from: Double, length: Double, in workspace: TemporaryDirectory) throws {
        let start = Int(from * Double(sampleRate)), end = min(samples.count, start + Int(length * Double(sampleRate)))
        try workspace.write(name, WAVFile.bytes(Array(samples[start..<end])))
    }

    /// Encodes `wav` in `workspace` as MP3 `name` with sox; a missing sox fails the test (CI
    /// installs it with its MP3 format) rather than skipping it.
    static func writeMP3(_ name: String, from wav: String, in workspace: TemporaryDirectory) throws {
        let sox = "/usr/bin/sox"
        try #require(FileManager.default.isExecutableFile(atPath: sox), "sox is required at \(sox) (apt-get install sox libsox-fmt-all)")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: sox)
        process.arguments = [workspace.path(wav), workspace.path(name)]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "sox could not write \(name)")
    }

    /// `count` bytes that look like nothing in particular, the same every run.
    static func noise(count: Int, seed: UInt64) -> [UInt8] {
        var state = seed
        return (0..<count).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: state >> 56)
        }
    }
}
