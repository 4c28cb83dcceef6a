import EarshotCore
import EarshotCrypto
import EarshotStore
import EarshotSystem
import EarshotTestSupport
import Foundation
import Testing

/// The one verifier: digests, signatures, trust; and the crypto wrappers it stands on.
struct CatalogCheckTests {
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

    @Test func authorKeyFilesRoundTripAndBadLinesAreNamed() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("keys-\(UUID())").path
        try Directory.create(dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let key = Ed25519.SigningKey()
        try AuthorKeyFile.writeSigningKey(key, to: dir + "/a.author.key", comment: "test")
        try AuthorKeyFile.writePublicKey(key, name: "studio", to: dir + "/a.author.pub", comment: "test")
        #expect(try AuthorKeyFile.readSigningKey(dir + "/a.author.key").publicKey == key.publicKey)
        #expect(try AuthorKeyFile.readTrustedAuthors(dir + "/a.author.pub") == [.init(publicKey: key.publicKey, name: "studio")])
        do {
            _ = try AuthorKeyFile.parseTrustedAuthors("# ok\n\nnot-a-key studio\n", source: "authors")
            Issue.record("a bad line was accepted")
        } catch {
            #expect(error.message.hasPrefix("authors:3:"))
        }
    }

    @Test func verifyChecksDigestSignatureAndTrust() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("check-\(UUID())").path
        try Directory.create(dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let body = try SyntheticCatalog.make().dataRepresentation()
        let author = Ed25519.SigningKey(), stranger = Ed25519.SigningKey()
        let bodyDigest = body.withUnsafeBytes { SHA256.hash($0) }
        let trailer = CatalogSignature(publicKey: author.publicKey, signature: author.sign(CatalogSignature.message(bodyDigest: bodyDigest)))
        try AtomicFile.write(body, to: dir + "/plain.earcat")
        try AtomicFile.write(body + trailer.encoded, to: dir + "/signed.earcat")
        var tampered = body + trailer.encoded
        tampered[tampered.count - 1] ^= 1
        try AtomicFile.write(tampered, to: dir + "/tampered.earcat")

        let plain = try CatalogCheck.verify(path: dir + "/plain.earcat", trust: .anyone)
        #expect(plain.sha256 == bodyDigest && plain.signer == nil && plain.signedSHA256 == bodyDigest)
        let signed = try CatalogCheck.verify(path: dir + "/signed.earcat", trust: .authors([.init(publicKey: author.publicKey, name: "studio")]))
        #expect(signed.signer?.name == "studio" && signed.signedSHA256 == bodyDigest && signed.sha256 != bodyDigest)

        func refusal(_ file: String, _ trust: CatalogCheck.Trust, expected: [UInt8]? = nil) -> CatalogCheck.Refusal.Kind? {
            do { _ = try CatalogCheck.verify(path: dir + "/" + file, trust: trust, expectedSHA256: expected); return nil } catch { return error.kind }
        }
        #expect(refusal("tampered.earcat", .anyone) == .badSignature)
        #expect(refusal("plain.earcat", .authors([.init(publicKey: author.publicKey, name: "a")])) == .untrusted)
        #expect(refusal("signed.earcat", .authors([.init(publicKey: stranger.publicKey, name: "s")])) == .untrusted)
        #expect(refusal("plain.earcat", .anyone, expected: [UInt8](repeating: 0, count: 32)) == .digestMismatch)
        #expect(refusal("plain.earcat", .anyone, expected: bodyDigest) == nil)
    }
}
