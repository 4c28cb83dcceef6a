/// A short, comparable form of a CURVE public key: the first 8 bytes of SHA-256 of its 32 bytes,
/// as lowercase hex pairs joined by ":" ("bc:18:f9:0d:60:fe:9a:98"). The daemon logs it, and
/// `earshot remote discover` and the Python client print it, so a key seen on the LAN can be
/// checked against the box by eye.
public enum CurveKeyFingerprint {
    /// Nil when `key` is not 40 characters of Z85.
    public static func of(_ key: String) -> String? {
        guard let bytes = Z85.decode(key), bytes.count == 32 else { return nil }
        let digest = bytes.withUnsafeBytes { SHA256.hash($0) }
        let hex = Array(SHA256.hex(Array(digest.prefix(8))))
        return stride(from: 0, to: hex.count, by: 2).map { String(hex[$0..<$0 + 2]) }.joined(separator: ":")
    }
}
