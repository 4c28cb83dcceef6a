import EarshotCrypto
import EarshotTestSupport
import Testing

/// Catalog authors' key files: written and read back, and a bad line named.
struct AuthorKeyFileTests {
    @Test func authorKeyFilesRoundTripAndBadLinesAreNamed() throws {
        let dir = try TemporaryDirectory("earshot-keys")
        let key = Ed25519.SigningKey()
        try AuthorKeyFile.writeSigningKey(key, to: dir.path("a.author.key"), comment: "test")
        try AuthorKeyFile.writePublicKey(key, name: "studio", to: dir.path("a.author.pub"), comment: "test")
        #expect(try AuthorKeyFile.readSigningKey(dir.path("a.author.key")).publicKey == key.publicKey)
        #expect(try AuthorKeyFile.readTrustedAuthors(dir.path("a.author.pub")) == [.init(publicKey: key.publicKey, name: "studio")])
        do {
            _ = try AuthorKeyFile.parseTrustedAuthors("# ok\n\nnot-a-key studio\n", source: "authors")
            Issue.record("a bad line was accepted")
        } catch {
            #expect(error.message.hasPrefix("authors:3:"))
        }
    }
}
