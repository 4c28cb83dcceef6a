/// Appends little-endian values to a byte array (for the versioned file formats).
struct ByteWriter {
    var bytes: [UInt8] = []

    mutating func append<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }
    mutating func append(_ value: Float) { append(value.bitPattern) }
    mutating func append(_ value: Double) { append(value.bitPattern) }
    mutating func append(bytes other: [UInt8]) { bytes.append(contentsOf: other) }
    /// Pads with zeros up to a multiple of `alignment`.
    mutating func align(to alignment: Int) {
        while bytes.count % alignment != 0 { bytes.append(0) }
    }
    /// Overwrites a UInt32 already written at `offset`.
    mutating func patch(_ value: UInt32, at offset: Int) {
        withUnsafeBytes(of: value.littleEndian) { v in
            for i in 0..<4 { bytes[offset + i] = v[i] }
        }
    }
}
