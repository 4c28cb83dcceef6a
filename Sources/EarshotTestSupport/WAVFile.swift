import Foundation

/// Writes mono 16-bit PCM WAV files, so the tests need no audio tools.
///
/// Samples are quantised as the product reads them back: libsndfile (the CLI's and the
/// daemon's reader) divides a 16-bit sample by 32768, so a sample `s` is stored as
/// `round(s × 32768)`, clipped to the 16-bit range (`RawPCM.int16`, the same as the raw files
/// the ALSA tests capture from). `asRead` says what a reader gets back.
public enum WAVFile {
    /// The bytes of a WAV file holding `samples` at `sampleRate`.
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
        for s in RawPCM.int16(samples) { append16(UInt16(bitPattern: s)) }
        return out
    }

    /// Writes the file to `path` and returns the path.
    @discardableResult
    public static func write(_ samples: [Float], sampleRate: Int = 16_000, to path: String) throws -> String {
        try Data(bytes(samples, sampleRate: sampleRate)).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// The samples a reader of the file gets back: quantised to 16 bits and scaled by 1/32768.
    public static func asRead(_ samples: [Float]) -> [Float] {
        RawPCM.int16(samples).map { Float($0) / 32_768 }
    }
}
