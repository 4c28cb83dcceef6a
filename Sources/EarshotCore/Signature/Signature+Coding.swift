/// The `.earsig` binary format, version 1 (see `docs/FORMATS.md`).
///
/// ```
/// offset size  field
///  0      8    magic "EARSIG\0\1"
///  8      2    format version (1)
/// 10      2    header size (40)
/// 12      4    analysis sample rate (Hz)
/// 16      2    FFT size            18  2  hop size
/// 20      8    duration (f64 seconds)
/// 28      4    peak record count N
/// 32      4    CRC-32 of the N peak records
/// 36      4    CRC-32 of bytes 0..<36
/// 40    6·N    peak records (`PeakCoding`)
/// ```
extension Signature {
    static let magic: [UInt8] = Array("EARSIG".utf8) + [0, 1]
    static let formatVersion: UInt16 = 1
    static let headerSize = 40

    /// The versioned binary form (`.earsig` file contents).
    public var dataRepresentation: [UInt8] {
        var w = ByteWriter()
        let body = Self.encodePeaks(peaks)
        w.bytes.reserveCapacity(Self.headerSize + body.count)
        w.append(bytes: Self.magic)
        w.append(Self.formatVersion)
        w.append(UInt16(Self.headerSize))
        w.append(UInt32(FingerprintParameters.sampleRate))
        w.append(UInt16(FingerprintParameters.fftSize))
        w.append(UInt16(FingerprintParameters.hopSize))
        w.append(duration)
        w.append(UInt32(body.count / PeakCoding.recordSize))
        w.append(CRC32.checksum(body))
        w.append(w.bytes.withUnsafeBytes { CRC32.checksum($0) })
        w.append(bytes: body)
        return w.bytes
    }

    static func encodePeaks(_ peaks: [Peak]) -> [UInt8] {
        var w = ByteWriter()
        w.bytes.reserveCapacity(peaks.count * PeakCoding.recordSize)
        PeakCoding.encode(peaks, into: &w)
        return w.bytes
    }

    /// Reads and validates a `.earsig`. Throws `signatureInvalid` saying what is wrong: foreign
    /// magic, unknown version, other analysis parameters, truncation or a checksum mismatch.
    public init(dataRepresentation data: [UInt8]) throws(EarshotError) {
        let result = data.withUnsafeBytes { raw in Result { () throws(EarshotError) in try Signature(bytes: raw) } }
        self = try result.get()
    }

    init(bytes raw: UnsafeRawBufferPointer) throws(EarshotError) {
        var r = ByteReader(raw) { .signatureInvalid($0) }
        // The magic first: a short foreign file is foreign, not a truncated signature.
        guard raw.prefix(8).elementsEqual(Self.magic.prefix(raw.count)) else {
            throw .signatureInvalid("not an Earshot signature (bad magic number)")
        }
        _ = try r.readBytes(8, "magic")
        let version = try r.read(UInt16.self, "version")
        guard version == Self.formatVersion else {
            throw .signatureInvalid("unsupported signature format version \(version) (this build reads \(Self.formatVersion))")
        }
        let headerSize = try r.read(UInt16.self, "header size")
        guard headerSize == Self.headerSize else { throw .signatureInvalid("unexpected header size \(headerSize)") }
        let rate = try r.read(UInt32.self, "sample rate")
        let fft = try r.read(UInt16.self, "FFT size")
        let hop = try r.read(UInt16.self, "hop size")
        guard Double(rate) == FingerprintParameters.sampleRate, Int(fft) == FingerprintParameters.fftSize,
            Int(hop) == FingerprintParameters.hopSize
        else {
            throw .signatureInvalid("made with other analysis parameters (\(rate) Hz, FFT \(fft), hop \(hop))")
        }
        let duration = try r.readDouble("duration")
        let count = Int(try r.read(UInt32.self, "peak count"))
        let bodyCRC = try r.read(UInt32.self, "peak checksum")
        let headerCRC = try r.read(UInt32.self, "header checksum")
        guard CRC32.checksum(UnsafeRawBufferPointer(rebasing: raw[0..<36])) == headerCRC else {
            throw .signatureInvalid("header checksum mismatch (file corrupt)")
        }
        guard count <= r.remaining / PeakCoding.recordSize, r.remaining == count * PeakCoding.recordSize else {
            throw .signatureInvalid("truncated or padded: header says \(count) peaks, \(r.remaining) bytes follow")
        }
        let body = try r.readBytes(count * PeakCoding.recordSize, "peaks")
        guard CRC32.checksum(body) == bodyCRC else { throw .signatureInvalid("peak data checksum mismatch (file corrupt)") }
        let peaks = try PeakCoding.decode(body, records: count) { .signatureInvalid($0) }
        try self.init(duration: duration, peaks: peaks)
    }
}
