/// ZeroMQ's Z85 text encoding of binary keys (RFC 32): 4 bytes become 5 printable characters.
/// The same text form as CURVE keys, so author keys look and travel like them.
public enum Z85 {
    private static let alphabet = Array(
        "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#".utf8)
    private static let values: [Int16] = {
        var table = [Int16](repeating: -1, count: 256)
        for (i, c) in alphabet.enumerated() { table[Int(c)] = Int16(i) }
        return table
    }()

    /// Text of `bytes`, whose count must be a multiple of 4.
    public static func encode(_ bytes: [UInt8]) -> String {
        precondition(bytes.count % 4 == 0, "Z85 encodes multiples of 4 bytes")
        var out = [UInt8]()
        out.reserveCapacity(bytes.count / 4 * 5)
        var i = 0
        while i < bytes.count {
            var value = UInt32(bytes[i]) << 24 | UInt32(bytes[i + 1]) << 16 | UInt32(bytes[i + 2]) << 8 | UInt32(bytes[i + 3])
            var chunk = [UInt8](repeating: 0, count: 5)
            for j in stride(from: 4, through: 0, by: -1) {
                chunk[j] = alphabet[Int(value % 85)]
                value /= 85
            }
            out += chunk
            i += 4
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of Z85 `text`, or nil when it is not valid Z85 (length a multiple of 5).
    public static func decode(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 5 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(chars.count / 5 * 4)
        var i = 0
        while i < chars.count {
            var value: UInt64 = 0
            for j in 0..<5 {
                let v = values[Int(chars[i + j])]
                guard v >= 0 else { return nil }
                value = value * 85 + UInt64(v)
            }
            guard value <= UInt64(UInt32.max) else { return nil }
            out += [UInt8(value >> 24 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
            i += 5
        }
        return out
    }
}
