import CZMQ

/// A CURVE key pair as Z85 text (40 characters each), the form libzmq, pyzmq and the key files use.
public struct CurveKeyPair: Sendable, Equatable {
    public let publicKey: String
    public let secretKey: String

    /// A fresh pair from libsodium (`zmq_curve_keypair`).
    public static func generate() throws(TransportError) -> CurveKeyPair {
        var publicKey = [CChar](repeating: 0, count: 41)
        var secretKey = [CChar](repeating: 0, count: 41)
        guard zmq_curve_keypair(&publicKey, &secretKey) == 0 else { throw .last("make a CURVE key pair") }
        return CurveKeyPair(publicKey: Self.text(publicKey), secretKey: Self.text(secretKey))
    }

    /// The pair of `secretKey`: a key file needs to hold only the secret half.
    public init(secretKey: String) throws(TransportError) {
        guard Self.isValidKey(secretKey) else {
            throw TransportError(operation: "read a CURVE secret key", code: EINVAL,
                                 message: "a key is 40 characters of Z85 text")
        }
        var publicKey = [CChar](repeating: 0, count: 41)
        guard zmq_curve_public(&publicKey, secretKey) == 0 else { throw .last("derive a CURVE public key") }
        self.init(publicKey: Self.text(publicKey), secretKey: secretKey)
    }

    init(publicKey: String, secretKey: String) {
        self.publicKey = publicKey
        self.secretKey = secretKey
    }

    /// True for 40 characters of Z85 that decode to 32 bytes.
    public static func isValidKey(_ text: String) -> Bool {
        Self.decode(text) != nil
    }

    /// The 32 key bytes of a Z85 key.
    static func decode(_ text: String) -> [UInt8]? {
        guard text.utf8.count == 40 else { return nil }
        var bytes = [UInt8](repeating: 0, count: 32)
        guard zmq_z85_decode(&bytes, text) != nil else { return nil }
        return bytes
    }

    /// The Z85 text of 32 key bytes (what ZAP hands over is binary).
    static func encode(_ bytes: [UInt8]) -> String? {
        guard bytes.count == 32 else { return nil }
        var text = [CChar](repeating: 0, count: 41)
        guard zmq_z85_encode(&text, bytes, 32) != nil else { return nil }
        return Self.text(text)
    }

    private static func text(_ chars: [CChar]) -> String {
        String(decoding: chars.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
