import Foundation

/// Writes mono 16-bit PCM WAV files, so the CLI tests need no audio tools.
public enum WAVFile {
    /// The bytes of a WAV file holding `samples` (clipped to -1…1) at `sampleRate`.
    public static func bytes(_ samples: [Float], sampleRate: Int = 16_000) -> [UInt8] {
        var out: [UInt8] = []
        func append32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { out += $0 } }
        func append16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { out += $0 } }
        let dataSize = UInt32(samples.count * 2)
        out += Array("RIFF".utf8)
        append32(36 + dataSize)
        out += Array("WAVE".utf8)
        out += Array("fmt ".utf8)
        append32(16)
        append16(1)  // PCM
        append16(1)  // mono
        append32(UInt32(sampleRate))
        append32(UInt32(sampleRate * 2))  // bytes per second
        append16(2)  // block align
        append16(16)  // bits per sample
        out += Array("data".utf8)
        append32(dataSize)
        out.reserveCapacity(out.count + samples.count * 2)
        for s in samples {
            append16(UInt16(bitPattern: Int16((max(-1, min(1, s)) * 32_767).rounded())))
        }
        return out
    }
}
