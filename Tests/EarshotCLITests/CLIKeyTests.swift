import EarshotTestSupport
import Foundation
import Testing

/// `earshot keygen` and the key options of `earshot remote`, without a daemon: the files, and the
/// messages a user sees when keys are missing or go unanswered.
@Suite struct CLIKeyTests {
    @Test func keygenWritesBothHalvesAndTheAllowListLine() throws {
        let ws = try TemporaryDirectory()
        let run = try ws.earshot("keygen", "-o", "tv-app")
        #expect(run.status == 0, "\(run.stderr)")
        let mode = try FileManager.default.attributesOfItem(atPath: ws.path("tv-app.key"))[.posixPermissions] as? Int
        #expect(mode == 0o600)
        // The .pub holds the printed allow-list line (after a comment): one format for both.
        let pub = String(decoding: try ws.bytes("tv-app.pub"), as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(pub.count == 2 && pub[0].hasPrefix("# "), "\(pub)")
        let line = try #require(pub.last)
        let fields = line.split(separator: " ")
        #expect(fields.count == 3 && fields[0].count == 40 && fields[1] == "tv-app" && fields[2] == "operator", "\(line)")
        #expect(run.stdout.split(separator: "\n").last.map(String.init) == line)
        #expect(run.stdout.contains("public key: \(fields[0])"))
        let again = try ws.earshot("keygen", "-o", "tv-app")
        #expect(again.status == 2)
        #expect(again.errorLines.first?.contains("--force") == true)
    }

    @Test func keygenGivesTheRoleAsked() throws {
        let ws = try TemporaryDirectory()
        for role in ["viewer", "operator", "admin"] {
            let run = try ws.earshot("keygen", "-o", "box-\(role)", "--role", role)
            #expect(run.status == 0, "\(run.stderr)")
            let line = try #require(run.stdout.split(separator: "\n").last.map(String.init))
            #expect(line.hasSuffix(" box-\(role) \(role)"), "\(line)")
            let pub = String(decoding: try ws.bytes("box-\(role).pub"), as: UTF8.self)
            #expect(pub.hasSuffix(line + "\n"))
        }
        let wrong = try ws.earshot("keygen", "-o", "box", "--role", "superuser")
        #expect(wrong.status == 2)
        #expect(wrong.stderr.contains("viewer, operator or admin"), "\(wrong.stderr)")
        #expect(!FileManager.default.fileExists(atPath: ws.path("box.key")))
    }

    @Test func remoteKeyMistakesAreExplained() throws {
        let ws = try TemporaryDirectory()
        _ = try ws.earshot("keygen", "-o", "me")
        _ = try ws.earshot("keygen", "-o", "server")
        let half = try ws.earshot("remote", "state", "--server-key", ws.path("server.pub"))
        #expect(half.status == 2)
        #expect(half.errorLines.first?.contains("--server-key needs --key") == true)
        // Nothing listens on port 1: the line says so, not that a key was refused.
        let silent = try ws.earshot("remote", "state", "--server", "tcp://127.0.0.1:1", "--timeout", "1",
                                    "--server-key", ws.path("server.pub"), "--key", ws.path("me.key"))
        #expect(silent.status == 5)
        #expect(silent.errorLines.first?.contains("DEADLINE_EXCEEDED: no answer from tcp://127.0.0.1:1") == true, "\(silent.stderr)")
        let notAKey = try ws.earshot("remote", "state", "--server-key", "nonsense", "--key", ws.path("me.key"))
        #expect(notAKey.status == 2)
    }
}
