import EarshotService
import EarshotTransport
import Testing

/// The allow-list file as the daemon reads it: comments, keys, roles, and errors that name the line.
struct AllowListFileTests {
    @Test(arguments: [
        ("KEY alice viewer extra", "line 1: expected"),
        ("short alice viewer", "is not a public key"),
        ("KEY alice root", "unknown role \"root\""),
        ("KEY alice viewer\nKEY bob admin", "line 2: this key is already on line 1"),
        ("KEY a:b viewer", "cannot contain ':'"),
    ])
    func allowListErrorsNameTheLine(text: String, expected: String) throws {
        let key = try CurveKeyPair.generate().publicKey
        do {
            _ = try AllowListFile.parse(text.replacingOccurrences(of: "KEY", with: key), origin: "clients.allow")
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.description.contains(expected), "\(error)")
        }
    }

    @Test func allowListCommentsAndKeysWithHashes() throws {
        var key = try CurveKeyPair.generate().publicKey
        // Z85 keys never start with "#", but may hold it.
        while !key.contains("#") { key = try CurveKeyPair.generate().publicKey }
        let entries = try AllowListFile.parse("# comment\n\n\(key)  tv-app\toperator  # the TV\n", origin: "x")
        #expect(entries == [.init(publicKey: key, name: "tv-app", role: .operator)])
    }
}
