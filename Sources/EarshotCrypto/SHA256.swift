import CSodium

/// SHA-256 (libsodium's `crypto_hash_sha256`), fed in pieces. A value type: copying it forks the
/// hash, so one pass over a file can finish the digest of a prefix and go on to the whole.
public struct SHA256: Sendable {
    public static let byteCount = 32
    private var state = crypto_hash_sha256_state()

    public init() {
        Sodium.ensureInitialized()
        crypto_hash_sha256_init(&state)
    }

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        crypto_hash_sha256_update(&state, base.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count))
    }

    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// The digest of everything fed so far (the hash itself is left as it was).
    public func finish() -> [UInt8] {
        var copy = state
        var out = [UInt8](repeating: 0, count: Self.byteCount)
        crypto_hash_sha256_final(&copy, &out)
        return out
    }

    public static func hash(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var h = SHA256()
        h.update(bytes)
        return h.finish()
    }

    /// Lower-case hex, as `sha256sum` prints it.
    public static func hex(_ digest: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(digest.count * 2)
        for b in digest {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of a hex digest (either case), or nil when it is not 64 hex digits.
    public static func digest(hex: String) -> [UInt8]? {
        let chars = Array(hex.utf8)
        guard chars.count == byteCount * 2 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(byteCount)
        var i = 0
        while i < chars.count {
            guard let hi = nibble(chars[i]), let lo = nibble(chars[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
