import EarshotTestSupport
import Foundation

/// Synthetic recordings for the CLI tests, written as WAV files.
enum AudioFixtures {
    static let sampleRate = 16_000

    /// `duration` seconds of the synthetic recording `seed`.
    static func music(seed: UInt64, duration: Double) -> [Float] {
        SyntheticMusic.make(seed: seed, duration: duration, sampleRate: Double(sampleRate))
    }

    /// Writes `duration` seconds of recording `seed` to `name` in `workspace`.
    static func writeWAV(_ name: String, seed: UInt64, duration: Double, in workspace: Workspace) throws {
        try workspace.write(name, WAVFile.bytes(music(seed: seed, duration: duration)))
    }

    /// Writes seconds `from..<from+length` of `samples` to `name`.
    static func writeExcerpt(_ name: String, of samples: [Float], from: Double, length: Double, in workspace: Workspace) throws {
        let start = Int(from * Double(sampleRate)), end = min(samples.count, start + Int(length * Double(sampleRate)))
        try workspace.write(name, WAVFile.bytes(Array(samples[start..<end])))
    }
}
