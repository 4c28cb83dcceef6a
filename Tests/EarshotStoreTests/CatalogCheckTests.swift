import EarshotCore
import EarshotCrypto
import EarshotStore
import EarshotSystem
import EarshotTestSupport
import Foundation
import Testing

/// The one verifier: digests, signatures, trust. (The crypto wrappers it stands on are
/// EarshotCryptoTests'.)
struct CatalogCheckTests {
    @Test func verifyChecksDigestSignatureAndTrust() throws {
        let folder = try TemporaryDirectory("earshot-check")
        let dir = folder.path
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
