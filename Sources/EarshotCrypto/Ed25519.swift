import CSodium

/// Ed25519 signatures (libsodium's `crypto_sign`): catalog authors sign, daemons verify.
public enum Ed25519 {
    public static let publicKeyBytes = 32
    public static let seedBytes = 32
    public static let signatureBytes = 64

    /// A signing key, held as its 32-byte seed (what key files store) and expanded once.
    public struct SigningKey: Sendable {
        public let seed: [UInt8]
        public let publicKey: [UInt8]
        private let expanded: [UInt8]

        /// A new random key.
        public init() {
            Sodium.ensureInitialized()
            var seed = [UInt8](repeating: 0, count: Ed25519.seedBytes)
            randombytes_buf(&seed, seed.count)
            self.init(validSeed: seed)
        }

        /// The key with this seed; nil unless it is 32 bytes.
        public init?(seed: [UInt8]) {
            guard seed.count == Ed25519.seedBytes else { return nil }
            self.init(validSeed: seed)
        }

        private init(validSeed seed: [UInt8]) {
            Sodium.ensureInitialized()
            var pk = [UInt8](repeating: 0, count: Ed25519.publicKeyBytes)
            var sk = [UInt8](repeating: 0, count: Int(crypto_sign_secretkeybytes()))
            crypto_sign_seed_keypair(&pk, &sk, seed)
            self.seed = seed
            publicKey = pk
            expanded = sk
        }

        public func sign(_ message: [UInt8]) -> [UInt8] {
            var signature = [UInt8](repeating: 0, count: Ed25519.signatureBytes)
            crypto_sign_detached(&signature, nil, message, UInt64(message.count), expanded)
            return signature
        }
    }

    /// True when `signature` is `publicKey`'s signature of `message`.
    public static func isValid(signature: [UInt8], of message: [UInt8], by publicKey: [UInt8]) -> Bool {
        Sodium.ensureInitialized()
        guard signature.count == signatureBytes, publicKey.count == publicKeyBytes else { return false }
        return crypto_sign_verify_detached(signature, message, UInt64(message.count), publicKey) == 0
    }
}
