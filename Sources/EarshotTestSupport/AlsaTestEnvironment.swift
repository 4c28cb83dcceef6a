import Foundation

/// An ALSA configuration for tests (and the CLI's end-to-end tests, which pass
/// `configurationPath` to the `earshot` process as `ALSA_CONFIG_PATH`), so that the real ALSA code path runs without a sound card.
///
/// alsa-lib reads its configuration from the files listed in `ALSA_CONFIG_PATH` (instead of
/// /usr/share/alsa/alsa.conf, which pulls in /etc/asound.conf and ~/.asoundrc) when it first
/// needs it, and again whenever that list or the files' times change. Setting the variable once,
/// before any ALSA call, for the whole test process, keeps the tests independent of the machine's
/// own configuration and avoids changing the environment while other threads may read it; the
/// tests that use ALSA all call `prepare()` first.
///
/// The file stands alone: it defines only what the tests open, with the `null` slave inline
/// (`slave.pcm "null"` would need alsa.conf's definition of `pcm.null`). The devices:
///
/// - `earshot_test:INFILE=<path>` — ALSA's `file` plugin reading raw samples from `path` in
///   whatever format, rate and channel count were negotiated (its `null` slave accepts any).
/// - `earshot_test_float:INFILE=<path>` — the same behind an `lfloat` plugin whose slave is fixed
///   to S16_LE, so a client can only capture float formats: a device without S16_LE. Good for
///   negotiation only: under a plugin that maps its slave's buffer, the file plugin skips parts
///   of its infile.
///
/// Measured with alsa-lib 1.2.8 (Debian 12): the file PCM is not paced (a read of any size
/// returns at once, about 250 million frames a second), and past the end of the infile every
/// read still reports a full period but leaves the caller's buffer untouched (behind a plugin
/// that maps its buffer, the last buffer's worth then repeats); a failing read of the infile
/// (e.g. a directory) is only reported through alsa-lib's error handler, never to the reader.
public enum AlsaTestEnvironment {
    /// The configuration file's path.
    public static let configurationPath: String = {
        let path = try! folder.write("asoundrc", text: configuration)
        setenv("ALSA_CONFIG_PATH", path, 1)
        return path
    }()

    /// Where the file is: one folder per test process, removed as it exits.
    private static let folder = try! TemporaryDirectory("EarshotAlsaTests", removedAtExit: true)

    /// Call before anything in the test touches ALSA.
    public static func prepare() {
        _ = configurationPath
    }

    /// The PCM name that captures the raw file at `path`.
    public static func device(reading path: String, float: Bool = false) -> String {
        "\(float ? "earshot_test_float" : "earshot_test"):INFILE=\(path)"
    }

    private static let configuration = """
        # Written by the Earshot tests; see AlsaTestEnvironment.swift.
        pcm.earshot_test {
            @args [ INFILE ]
            @args.INFILE { type string default "/dev/zero" }
            type file
            slave.pcm { type null }
            file "/dev/null"
            infile $INFILE
            format "raw"
            hint { show on description "Earshot test: raw samples from a file" }
        }
        pcm.earshot_test_float {
            @args [ INFILE ]
            @args.INFILE { type string default "/dev/zero" }
            type lfloat
            slave {
                pcm {
                    type file
                    slave.pcm { type null }
                    file "/dev/null"
                    infile $INFILE
                    format "raw"
                }
                format S16_LE
            }
        }

        """
}

/// Raw little-endian sample files for the file PCM.
public enum RawPCM {
    /// Writes `samples` as raw S16_LE and returns the path.
    public static func writeS16(_ samples: [Int16], to path: String) throws -> String {
        var bytes = [UInt8]()
        bytes.reserveCapacity(samples.count * 2)
        for s in samples { withUnsafeBytes(of: s.littleEndian) { bytes.append(contentsOf: $0) } }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Writes `samples` as raw S32_LE and returns the path.
    public static func writeS32(_ samples: [Int32], to path: String) throws -> String {
        var bytes = [UInt8]()
        for s in samples { withUnsafeBytes(of: s.littleEndian) { bytes.append(contentsOf: $0) } }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Writes `samples` as raw FLOAT_LE and returns the path.
    public static func writeFloat(_ samples: [Float], to path: String) throws -> String {
        var bytes = [UInt8]()
        for s in samples { withUnsafeBytes(of: s.bitPattern.littleEndian) { bytes.append(contentsOf: $0) } }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Floats in [-1, 1] quantised to 16 bits.
    public static func int16(_ samples: [Float]) -> [Int16] {
        samples.map { Int16(max(-32768, min(32767, ($0 * 32768).rounded()))) }
    }
}
