import EarshotCrypto
import Testing

/// The libsodium wrappers against known answers: SHA-256, Z85, Ed25519.
struct CryptoWrapperTests {
    @Test func cryptoWrappersMatchKnownAnswers() throws {
        // FIPS 180-2's "abc".
        #expect(SHA256.hex(Array("abc".utf8).withUnsafeBytes { SHA256.hash($0) })
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        // Z85's specification example (RFC 32).
        #expect(Z85.encode([0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B]) == "HelloWorld")
        #expect(Z85.decode("HelloWorld") == [0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B])
        #expect(Z85.decode("Hello") != nil && Z85.decode("Hell") == nil && Z85.decode("He~lo") == nil)
        let key = Ed25519.SigningKey()
        let message = Array("catalog".utf8)
        let signature = key.sign(message)
        #expect(Ed25519.isValid(signature: signature, of: message, by: key.publicKey))
        #expect(!Ed25519.isValid(signature: signature, of: message + [0], by: key.publicKey))
        #expect(Ed25519.SigningKey(seed: key.seed)?.publicKey == key.publicKey)
    }
}
