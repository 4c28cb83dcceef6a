/// An author's signature appended to a catalog (`earshot catalog sign`).
///
/// The trailer is 104 bytes after the catalog's last section: the magic "EARSIG01", the
/// author's Ed25519 public key (32 bytes) and the signature (64 bytes) of `message(bodyDigest:)`,
/// where the body digest is the SHA-256 of every byte before the trailer. The core only finds
/// and parses it; checking it needs a crypto library (EarshotStore does that).
public struct CatalogSignature: Sendable, Equatable {
    public static let magic: [UInt8] = Array("EARSIG01".utf8)
    public static let publicKeyBytes = 32
    public static let signatureBytes = 64
    public static let byteCount = 8 + publicKeyBytes + signatureBytes
    /// What is signed starts with this, so a signature over a catalog means nothing elsewhere.
    public static let context: [UInt8] = Array("earshot catalog signature v1\u{0}".utf8)

    public var publicKey: [UInt8]
    public var signature: [UInt8]

    public init(publicKey: [UInt8], signature: [UInt8]) {
        precondition(publicKey.count == Self.publicKeyBytes && signature.count == Self.signatureBytes)
        self.publicKey = publicKey
        self.signature = signature
    }

    /// The trailer in `bytes` (exactly `byteCount` of them), or nil when they are not one.
    public init?(trailer bytes: UnsafeRawBufferPointer) {
        guard bytes.count == Self.byteCount, bytes.prefix(8).elementsEqual(Self.magic) else { return nil }
        publicKey = Array(bytes[8..<(8 + Self.publicKeyBytes)])
        signature = Array(bytes[(8 + Self.publicKeyBytes)...])
    }

    /// The trailer's bytes.
    public var encoded: [UInt8] { Self.magic + publicKey + signature }

    /// What the author signs: the context, then the SHA-256 of the catalog without its trailer.
    public static func message(bodyDigest: [UInt8]) -> [UInt8] { context + bodyDigest }
}
