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
/// 28      4    peak count N
/// 32      4    CRC-32 of the N peak records
/// 36      4    CRC-32 of bytes 0..<36
/// 40    8·N    peaks: u32 time (1/64 frame), u16 bin (1/64 bin), i16 magnitude (1/256 nepers)
/// ```
extension Signature {
    static let magic: [UInt8] = Array("EARSIG".utf8) + [0, 1]
    static let formatVersion: UInt16 = 1
    static let headerSize = 40
    static let peakRecordSize = 8

    /// The versioned binary form (`.earsig` file contents).
    public var dataRepresentation: [UInt8] {
        var w = ByteWriter()
        w.bytes.reserveCapacity(Self.headerSize + peaks.count * Self.peakRecordSize)
        w.append(bytes: Self.magic)
        w.append(Self.formatVersion)
        w.append(UInt16(Self.headerSize))
        w.append(UInt32(FingerprintParameters.sampleRate))
        w.append(UInt16(FingerprintParameters.fftSize))
        w.append(UInt16(FingerprintParameters.hopSize))
        w.append(duration)
        w.append(UInt32(peaks.count))
        let body = Self.encodePeaks(peaks)
        w.append(CRC32.checksum(body))
        w.append(w.bytes.withUnsafeBytes { CRC32.checksum($0) })
        w.append(bytes: body)
        return w.bytes
    }

    static func encodePeaks(_ peaks: [Peak]) -> [UInt8] {
        var w = ByteWriter()
        w.bytes.reserveCapacity(peaks.count * peakRecordSize)
        for p in peaks {
            w.append(UInt32(clamping: Int((p.time * 64).rounded())))
            w.append(UInt16(clamping: Int((p.bin * 64).rounded())))
            w.append(Int16(clamping: Int((p.magnitude * 256).rounded())))
        }
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
        let magic = try r.readBytes(8, "magic")
        guard magic.elementsEqual(Self.magic) else {
            throw .signatureInvalid("not an Earshot signature (bad magic number)")
        }
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
        guard count <= r.remaining / Self.peakRecordSize, r.remaining == count * Self.peakRecordSize else {
            throw .signatureInvalid("truncated or padded: header says \(count) peaks, \(r.remaining) bytes follow")
        }
        let body = try r.readBytes(count * Self.peakRecordSize, "peaks")
        guard CRC32.checksum(body) == bodyCRC else { throw .signatureInvalid("peak data checksum mismatch (file corrupt)") }
        var peaks = [Peak]()
        peaks.reserveCapacity(count)
        var pr = ByteReader(body) { .signatureInvalid($0) }
        for _ in 0..<count {
            let t = try pr.read(UInt32.self, "peak time")
            let b = try pr.read(UInt16.self, "peak bin")
            let m = try pr.read(Int16.self, "peak magnitude")
            peaks.append(Peak(time: Float(t) / 64, bin: Float(b) / 64, magnitude: Float(m) / 256))
        }
        try self.init(duration: duration, peaks: peaks)
    }
}
