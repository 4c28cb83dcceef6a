/// CRC-32 (IEEE 802.3, reflected, as in zlib and PNG), slicing-by-8 for speed.
///
/// Guards signatures and catalog sections against truncation and bit rot; not a security hash.
public enum CRC32 {
    private static let tables: [[UInt32]] = {
        var t = [[UInt32]](repeating: [UInt32](repeating: 0, count: 256), count: 8)
        for i in 0..<256 {
            var c = UInt32(i)
            for _ in 0..<8 { c = (c & 1) != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
            t[0][i] = c
        }
        for i in 0..<256 {
            for k in 1..<8 { t[k][i] = (t[k - 1][i] >> 8) ^ t[0][Int(t[k - 1][i] & 0xFF)] }
        }
        return t
    }()

    /// The checksum of `bytes`, continuing from `crc` (start with 0).
    public static func checksum(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        var c = ~crc
        let t = tables
        var i = 0
        let n = bytes.count
        t[0].withUnsafeBufferPointer { t0 in
            t[1].withUnsafeBufferPointer { t1 in
                t[2].withUnsafeBufferPointer { t2 in
                    t[3].withUnsafeBufferPointer { t3 in
                        t[4].withUnsafeBufferPointer { t4 in
                            t[5].withUnsafeBufferPointer { t5 in
                                t[6].withUnsafeBufferPointer { t6 in
                                    t[7].withUnsafeBufferPointer { t7 in
                                        while i + 8 <= n {
                                            let lo = bytes.loadUnaligned(fromByteOffset: i, as: UInt32.self).littleEndian ^ c
                                            let hi = bytes.loadUnaligned(fromByteOffset: i + 4, as: UInt32.self).littleEndian
                                            let low: UInt32 = t7[Int(lo & 0xFF)] ^ t6[Int((lo >> 8) & 0xFF)]
                                                ^ t5[Int((lo >> 16) & 0xFF)] ^ t4[Int(lo >> 24)]
                                            let high: UInt32 = t3[Int(hi & 0xFF)] ^ t2[Int((hi >> 8) & 0xFF)]
                                                ^ t1[Int((hi >> 16) & 0xFF)] ^ t0[Int(hi >> 24)]
                                            c = low ^ high
                                            i += 8
                                        }
                                        while i < n {
                                            c = t0[Int((c ^ UInt32(bytes[i])) & 0xFF)] ^ (c >> 8)
                                            i += 1
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        return ~c
    }

    public static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }
}
