import EarshotSync
import EarshotTestSupport
import EarshotTransport
import EarshotWire
import Foundation
import Testing

/// `earshot remote …` against a real earshotd: what a person at a terminal sees.
@Suite("earshot remote", .serialized)
struct RemoteCLITests {
    private func earshot(_ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
        let binary = ((try DaemonHarness.executable()) as NSString).deletingLastPathComponent + "/earshot"
        let p = Process()
        p.executableURL = URL(fileURLWithPath: binary)
        p.arguments = arguments
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = FileHandle.nullDevice
        try p.run()
        let o = out.fileHandleForReading.readDataToEndOfFile(), e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
    }

    /// `--server-key` and `--key` options for the harness's operator key (CURVE, the default).
    private func keys(_ daemon: DaemonHarness, _ role: ClientRole = .operator) throws -> [String] {
        let keyFile = try self.keyFile(daemon, role)
        // `=`: a Z85 key may begin with "-", which would read as an option.
        return ["--server-key=" + (try #require(daemon.serverPublicKey)), "--key", keyFile]
    }

    /// A key made with `keygen --role viewer`, its .pub appended to the allow-list as it is: the
    /// client is admitted as a viewer, and nothing more.
    @Test func aPubFileAppendedToTheAllowListAdmitsItsRole() async throws {
        let daemon = try await DaemonHarness()
        let dir = daemon.directory.path
        let keygen = try earshot(["keygen", "-o", dir + "/phone", "--role", "viewer"])
        #expect(keygen.status == 0, "\(keygen.err)")
        let allowList = try FileHandle(forWritingTo: daemon.allowListURL)
        try allowList.seekToEnd()
        try allowList.write(contentsOf: try Data(contentsOf: URL(fileURLWithPath: dir + "/phone.pub")))
        try allowList.close()
        let k = ["--server-key=" + (try #require(daemon.serverPublicKey)), "--key", dir + "/phone.key", "--timeout", "10"]
        // Re-read within a second of the change.
        try await eventually("the phone's key is admitted", every: .milliseconds(500), {
            try earshot(["remote", "state", "--server", daemon.rpcEndpoint] + k)
        }, until: { $0.status == 0 })
        let match = try earshot(["remote", "match", "--server", daemon.rpcEndpoint] + k)
        #expect(match.status != 0)
        #expect(match.err.contains("PERMISSION_DENIED"), "\(match.err)")
        #expect(daemon.log.contains("allow-list re-read (file changed): 4 client(s)"), "\(daemon.log)")
    }

    @Test func matchStateStreamAndWatch() async throws {
        let daemon = try await DaemonHarness()
        let k = try keys(daemon)
        try await waitUntilFollowing(daemon)
        let match = try earshot(["remote", "match", "--server", daemon.rpcEndpoint, "--timeout", "60"] + k)
        #expect(match.status == 0, "\(match.err)")
        #expect(match.out.hasPrefix("match: Piece 1"))

        let json = try earshot(["remote", "match", "--server", daemon.rpcEndpoint, "--timeout", "60", "--json"] + k)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any])
        #expect(object["outcome"] as? String == "MATCH_OUTCOME_MATCH")

        let state = try earshot(["remote", "state", "--server", daemon.rpcEndpoint, "--timeout", "60"] + k)
        #expect(state.status == 0)
        #expect(state.out.contains("now playing: Piece 1"))
        #expect(state.out.contains("capture: file:"))

        let stream = try earshot(["remote", "stream", "--server", daemon.rpcEndpoint, "--duration", "3", "--repeats"] + k)
        #expect(stream.status == 0, "\(stream.err)")
        #expect(stream.out.split(separator: "\n").filter { $0.contains("Piece 1") }.count >= 2)
        // The first line that names an item is news to this stream, whoever heard it before.
        #expect(stream.out.split(separator: "\n").first { $0.contains("Piece 1") }?.hasPrefix("match: ") == true, "\(stream.out)")

        let watch = try earshot(["remote", "watch", "--server", daemon.rpcEndpoint, "--events", daemon.eventsEndpoint,
                                 "--duration", "2.5", "--timeout", "60"] + k)
        #expect(watch.status == 0, "\(watch.err)")
        #expect(watch.out.contains("now playing: Piece 1"))
    }

    /// The controller sets cues from a playlist, a follower sees them fire, the schedule lists
    /// them, a bad playlist is refused with its line, and clear goes back to the catalog's.
    @Test func cuesSetFollowScheduleClear() async throws {
        let daemon = try await DaemonHarness()
        let k = try keys(daemon)
        let server = ["--server", daemon.rpcEndpoint, "--timeout", "60"]
        // The programme plays piece 1 from 10 s to 50 s, looping: cues every 5 s fire within any 12 s.
        var playlist = "#EXTM3U\n#EXT-X-PROGRAM-DATE-TIME:2024-05-01T20:00:00Z\n"
        for (i, start) in stride(from: 12, through: 47, by: 5).enumerated() {
            playlist += "#EXT-X-DATERANGE:ID=\"q\(i)\",CLASS=\"com.example.quiz\",START-DATE=\"2024-05-01T20:00:\(start)Z\",DURATION=2\n"
        }
        playlist += "#EXTINF:60,\npiece1.ts\n"
        let file = daemon.directory.appendingPathComponent("quiz.m3u8").path
        try playlist.write(toFile: file, atomically: true, encoding: .utf8)
        let set = try earshot(["remote", "cues", "set", "--id", "piece1", file] + server + k)
        #expect(set.status == 0, "\(set.err)")
        #expect(set.out.contains("set 8 cue(s) on Piece 1"))

        let follow = try earshot(["remote", "cues", "follow", "--duration", "12"] + server + k)
        #expect(follow.status == 0, "\(follow.err)")
        #expect(follow.out.contains("STARTED q"), "\(follow.out)")
        #expect(follow.out.contains("now: "))

        let schedule = try earshot(["remote", "cues", "schedule", "--id", "piece1"] + server + k)
        #expect(schedule.out.contains("8 cue(s), set by the controller"))
        #expect(schedule.out.contains("q0 at 12.00 s  to 14.00 s  com.example.quiz"), "\(schedule.out)")

        try "#EXTM3U\n#EXT-X-DATERANGE:ID=\"x\",START-DATE=\"2024-05-01T20:00:12Z\",DURATION=-1\n".write(
            toFile: file, atomically: true, encoding: .utf8)
        let bad = try earshot(["remote", "cues", "set", "--id", "piece1", "--origin", "2024-05-01T20:00:00Z", file] + server + k)
        #expect(bad.status == 3)
        #expect(bad.err.contains("line 2"), "\(bad.err)")

        let clear = try earshot(["remote", "cues", "clear", "--id", "piece1"] + server + k)
        #expect(clear.status == 0, "\(clear.err)")
        #expect(clear.out.contains("back to the catalog's 0 cue(s)"))
    }

    /// A person keeps matches in their library: add (match now, and what the box follows), list
    /// as a table and JSON, watch the changes from the start, a refused remove that changes
    /// nothing, remove, export; the dashboard shows the notice; admin commands need an admin key.
    @Test func libraryAddListWatchRemoveExport() async throws {
        let daemon = try await DaemonHarness()
        let k = try keys(daemon), admin = try keys(daemon, .admin)
        let server = ["--server", daemon.rpcEndpoint, "--timeout", "60"]
        try await waitUntilFollowing(daemon)

        // The dashboard runs while an item is added: it shows the library notice.
        let binary = ((try DaemonHarness.executable()) as NSString).deletingLastPathComponent + "/earshot"
        let watcher = Process(), watched = Pipe()
        watcher.executableURL = URL(fileURLWithPath: binary)
        watcher.arguments = ["remote", "watch", "--events", daemon.eventsEndpoint, "--duration", "5"] + server + k
        watcher.standardOutput = watched
        watcher.standardError = FileHandle.nullDevice
        let subscriptions = try await subscriptionCount(daemon)
        try watcher.run()
        try await eventually("the dashboard's subscription reaches the box") { try await subscriptionCount(daemon) > subscriptions }

        let matched = try earshot(["remote", "library", "add", "--match"] + server + k)
        #expect(matched.status == 0, "\(matched.err)")
        #expect(matched.out.contains("match: Piece 1") && matched.out.contains("added "), "\(matched.out)")
        let followed = try earshot(["remote", "library", "add", "--from-last-match"] + server + k)
        #expect(followed.status == 0, "\(followed.err)")
        #expect(followed.out.contains("library version 2, 2 items"), "\(followed.out)")
        let dashboard = String(decoding: watched.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        watcher.waitUntilExit()
        #expect(dashboard.contains("library: owner ") && dashboard.contains("added 1"), "\(dashboard)")

        let list = try earshot(["remote", "library"] + server + k)
        #expect(list.status == 0, "\(list.err)")
        #expect(list.out.hasPrefix("your library: 2 items (version 2)"), "\(list.out)")
        #expect(list.out.split(separator: "\n").filter { $0.contains("Piece 1") }.count == 2, "\(list.out)")
        let json = try earshot(["remote", "library", "list", "--json"] + server + k)
        let ids = try json.out.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])["id"] as? String
        }
        #expect(ids.count == 2 && ids.allSatisfy { $0?.count == 32 }, "\(json.out)")

        let watch = try earshot(["remote", "library", "watch", "--from-version", "0", "--duration", "2"] + server + k)
        #expect(watch.status == 0, "\(watch.err)")
        let lines = watch.out.split(separator: "\n")
        #expect(lines.count == 3 && lines[0].hasPrefix("v1 added") && lines[1].hasPrefix("v2 added") && lines[2].hasPrefix("v2 current"),
                "\(watch.out)")

        // Not this key's item: refused, and nothing is removed.
        let refused = try earshot(["remote", "library", "remove", String(repeating: "ab", count: 16), ids[0]!] + server + k)
        #expect(refused.status == 5 && refused.err.contains("NOT_FOUND"), "\(refused.err)")
        let removed = try earshot(["remote", "library", "remove", ids[0]!] + server + k)
        #expect(removed.status == 0 && removed.out.contains("1 left"), "\(removed.out) \(removed.err)")

        let file = daemon.directory.appendingPathComponent("mine.json").path
        let export = try earshot(["remote", "library", "export", "-o", file] + server + k)
        #expect(export.status == 0, "\(export.err)")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: file))) as? [String: Any])
        #expect((document["items"] as? [[String: Any]])?.map { $0["id"] as? String } == [ids[1]])
        #expect(document["version"] as? Int == 3)
        // A result is a result: on stdout, without the "earshot:" of diagnostics.
        #expect(export.out == "wrote 1 item to \(file)\n" && export.err.isEmpty, "\(export.out) \(export.err)")
        // The newest item (added at v2) is gone since: a count says so, and one is "1 item".
        let rewatch = try earshot(["remote", "library", "watch", "--from-version", "0", "--duration", "1"] + server + k)
        let second = try #require(rewatch.out.split(separator: "\n").first { $0.hasPrefix("v2 ") }.map(String.init), "\(rewatch.out)")
        #expect(second.hasPrefix("v2 added: 1 item removed since — "), "\(second)")
        #expect(!rewatch.out.contains("1 items") && !rewatch.out.contains(":  "), "\(rewatch.out)")

        // Admin commands: refused for the operator, served for the admin.
        let denied = try earshot(["remote", "library", "owners"] + server + k)
        #expect(denied.status == 5 && denied.err.contains("PERMISSION_DENIED"), "\(denied.err)")
        let owners = try earshot(["remote", "library", "owners"] + server + admin)
        #expect(owners.status == 0 && owners.out.contains("operator  1 "), "\(owners.out) \(owners.err)")
        let unconfirmed = try earshot(["remote", "library", "delete-owner", "operator"] + server + admin)
        #expect(unconfirmed.status == 2 && unconfirmed.err.contains("--yes"))
        let backup = try earshot(["remote", "library", "backup"] + server + admin)
        #expect(backup.status == 0 && backup.out.contains("library-backups/library-"), "\(backup.out) \(backup.err)")
        let deleted = try earshot(["remote", "library", "delete-owner", "operator", "--yes"] + server + admin)
        #expect(deleted.status == 0, "\(deleted.err)")
        let empty = try earshot(["remote", "library"] + server + k)
        #expect(empty.out.hasPrefix("your library: 0 items (version 4)"), "\(empty.out)")
    }


    /// A catalog author's whole path: an author key, `catalog sign`, `catalog display` showing
    /// the signer, `remote catalog push` to two boxes at once (one of which refuses the admin
    /// call from an operator key), `list`, `disable`, `remove`.
    @Test func signAndPushToTwoBoxes() async throws {
        let one = try await DaemonHarness(), two = try await DaemonHarness()
        let dir = one.directory.path
        let adminKey = try keyFile(one, .admin)
        // The same admin key for the second box: allow it there too.
        try (DaemonHarness.allowList([(one.clientKeys[.admin]!, "admin", .admin)]))
            .write(to: two.allowListURL, atomically: true, encoding: .utf8)
        try await eventually("box two re-reads its allow-list") { two.log.contains("allow-list re-read") }

        let catalog = try fixtureCatalog(in: one, named: "show.earcat")
        let keygen = try earshot(["keygen", "--author", "-o", dir + "/studio"])
        #expect(keygen.status == 0 && keygen.out.contains("studio.author.key"), "\(keygen.err)")
        let sign = try earshot(["catalog", "sign", "-c", catalog, "--key", dir + "/studio.author.key"])
        #expect(sign.status == 0, "\(sign.err)")
        let display = try earshot(["catalog", "display", "-c", catalog])
        #expect(display.out.contains("signed by:") && !display.out.contains("unsigned"), "\(display.out)")

        let fleet = dir + "/fleet.txt"
        try "# two boxes\n\(one.rpcEndpoint) \(try #require(one.serverPublicKey))\n\(two.rpcEndpoint) \(try #require(two.serverPublicKey))\n"
            .write(toFile: fleet, atomically: true, encoding: .utf8)
        let push = try earshot(["remote", "catalog", "push", catalog, "--name", "signed", "--enable", "--servers-file", fleet,
                                "--key", adminKey])
        #expect(push.status == 0, "\(push.out) \(push.err)")
        #expect(push.out.contains("BOX") && push.out.components(separatedBy: "installed signed v1").count == 3, "\(push.out)")

        let k = ["--server", one.rpcEndpoint, "--server-key=" + (try #require(one.serverPublicKey)), "--key", adminKey]
        let list = try earshot(["remote", "catalog", "list"] + k)
        #expect(list.status == 0 && list.out.contains("signed") && list.out.contains("v1"), "\(list.out) \(list.err)")
        #expect(try earshot(["remote", "catalog", "disable", "signed"] + k).out.contains("disabled"))
        #expect(try earshot(["remote", "catalog", "remove", "signed"] + k).status == 0)
        let missing = try earshot(["remote", "catalog", "remove", "signed"] + k)
        #expect(missing.status == 5 && missing.err.contains("NOT_FOUND"), "\(missing.err)")
        // An operator key may not push: the box says PERMISSION_DENIED and the exit status is 5.
        let denied = try earshot(["remote", "catalog", "push", catalog, "--server", one.rpcEndpoint] + (try keys(one)))
        #expect(denied.status == 5 && denied.err.contains("PERMISSION_DENIED"), "\(denied.err)")
    }

    /// A catalog the box could not load is listed FAILED with its signer unknown (not "unsigned"),
    /// and removing it says what it was, without a version it never had.
    @Test func aFailedCatalogHasNoSignerOrVersionToShow() async throws {
        let daemon = try await DaemonHarness()
        let dir = daemon.directory.path
        let adminKey = try keyFile(daemon, .admin)
        let signed = try fixtureCatalog(in: daemon, named: "flip.earcat")
        _ = try earshot(["keygen", "--author", "-o", dir + "/studio"])
        #expect(try earshot(["catalog", "sign", "-c", signed, "--key", dir + "/studio.author.key"]).status == 0)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: signed)))
        bytes[bytes.count / 2] ^= 0xFF
        try Data(bytes).write(to: daemon.directory.appendingPathComponent("state/catalogs/flip.earcat"))
        let k = ["--server", daemon.rpcEndpoint, "--server-key=" + (try #require(daemon.serverPublicKey)), "--key", adminKey]
        let list = try await eventually("the damaged catalog is listed FAILED", every: .milliseconds(250), {
            try earshot(["remote", "catalog", "list"] + k)
        }, until: { $0.out.contains("FAILED") })
        let row = try #require(list.out.split(separator: "\n").first { $0.hasPrefix("flip ") }, "\(list.out)")
        #expect(row.contains("FAILED") && !row.contains("unsigned") && row.hasSuffix(" -"), "\(row)")
        let describe = try earshot(["remote", "catalog", "describe", "flip"] + k)
        #expect(describe.status == 5 && describe.err.contains("catalog \"flip\" failed to load: "), "\(describe.err)")
        let removed = try earshot(["remote", "catalog", "remove", "flip"] + k)
        #expect(removed.status == 0, "\(removed.err)")
        #expect(removed.out.hasPrefix("removed flip (it had failed to load: ") && !removed.out.contains("v0"), "\(removed.out)")
    }

    /// A push says how it ended once: one box's failure is the error alone, a fleet's table cuts a
    /// long refusal and prints it whole below, `--json` carries every outcome, and progress at
    /// 100 % says the bytes are all sent rather than "0 B/s, ETA -".
    @Test func pushOutcomesAreSaidOnceAndFitTheTable() async throws {
        let one = try await DaemonHarness(), two = try await DaemonHarness()
        let dir = one.directory.path
        let adminKey = try keyFile(one, .admin)
        let catalog = try fixtureCatalog(in: one, named: "show.earcat")
        let keyOne = try #require(one.serverPublicKey), keyTwo = try #require(two.serverPublicKey)

        // Box two does not know this admin key.
        let alone = try earshot(["remote", "catalog", "push", catalog, "--server", two.rpcEndpoint, "--server-key=" + keyTwo,
                                 "--key", adminKey, "--timeout", "5"])
        #expect(alone.status == 5)
        #expect(alone.out.isEmpty, "\(alone.out)")
        #expect(alone.err.components(separatedBy: "refused this client's key").count == 2, "said more than once:\n\(alone.err)")

        let fleet = dir + "/fleet.txt"
        try "\(one.rpcEndpoint) \(keyOne)\n\(two.rpcEndpoint) \(keyTwo)\n".write(toFile: fleet, atomically: true, encoding: .utf8)
        let push = try earshot(["remote", "catalog", "push", catalog, "--servers-file", fleet, "--key", adminKey, "--timeout", "5"])
        #expect(push.status == 5)
        let lines = push.out.split(separator: "\n").map(String.init)
        let rowTwo = try #require(lines.first { $0.hasPrefix(two.rpcEndpoint + " ") }, "\(push.out)")
        #expect(rowTwo.contains("FAILED: ") && rowTwo.contains("…"), "\(rowTwo)")
        #expect(lines.allSatisfy { $0.count <= 130 }, "\(push.out)")
        #expect(lines.contains { $0.hasPrefix(two.rpcEndpoint + ": FAILED: ") && $0.hasSuffix("(not in its allow-list?)") }, "\(push.out)")
        #expect(lines.contains { $0.hasPrefix(one.rpcEndpoint + " ") && ($0.contains("replaced show v") || $0.contains("installed show v")) },
                "\(push.out)")
        // Progress (not a terminal: a line per quarter) never shows a rate of nothing at 100 %.
        let progress = push.err.split(separator: "\n").filter { $0.contains("% ") }
        #expect(!progress.isEmpty && progress.allSatisfy { !$0.contains("0 B/s") && !$0.contains("ETA -") }, "\(push.err)")
        #expect(progress.contains { $0.contains("100% ") && $0.contains("all sent") }, "\(push.err)")

        let json = try earshot(["remote", "catalog", "push", catalog, "--servers-file", fleet, "--key", adminKey, "--timeout", "5",
                                "--json", "--quiet"])
        #expect(json.status == 5)
        let outcomes = try #require(try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [[String: Any]], "\(json.out)")
        #expect(outcomes.count == 2)
        #expect(outcomes.first { $0["box"] as? String == one.rpcEndpoint }?["ok"] as? Bool == true)
        let failed = try #require(outcomes.first { $0["box"] as? String == two.rpcEndpoint })
        #expect(failed["ok"] as? Bool == false)
        #expect((failed["error"] as? String)?.hasSuffix("(not in its allow-list?)") == true, "\(failed)")
    }

    /// Following commands write each line when its event comes, whatever stdout is (here a pipe,
    /// as for a program reading `--json`), and SIGTERM ends them cleanly: status 0, every line
    /// written whole.
    @Test func followingCommandsWriteEachLineAsItComesAndEndCleanlyOnSIGTERM() async throws {
        let daemon = try await DaemonHarness()
        let k = try keys(daemon)
        let server = ["--server", daemon.rpcEndpoint, "--timeout", "60"]
        let commands: [[String]] = [
            ["remote", "stream", "--json", "--repeats"],
            ["remote", "watch", "--events", daemon.eventsEndpoint],
            ["remote", "cues", "follow", "--json"],
            ["remote", "library", "watch", "--json"],
            ["remote", "library", "watch"],
        ]
        for command in commands {
            let name = command.joined(separator: " ")
            let running = try FollowingCommand(try earshotPath(), command + server + k)
            try await running.waitForLines(1, "\(name): a line reaches the pipe while it runs")
            if command.starts(with: ["remote", "library", "watch"]) {
                // A change committed now is on the pipe within moments, not at the end.
                let before = running.lines.withLock { $0.count }
                let client = try daemon.client(.operator)
                defer { client.close() }
                _ = try await Lib.add(client, [Lib.new(title: "kept")])
                try await running.waitForLines(before + 1, "\(name): the added item's line comes")
            }
            #expect(running.process.isRunning, "\(name) ended by itself")
            kill(running.process.processIdentifier, SIGTERM)
            let ended = await running.finish(seconds: 10)
            #expect(ended && running.process.terminationReason == .exit && running.process.terminationStatus == 0,
                    "\(name): SIGTERM ended it with \(running.process.terminationReason == .exit ? "status" : "signal") \(running.process.terminationStatus)")
            #expect(running.partial.withLock { $0.isEmpty }, "\(name): a line was left half written")
            if command.contains("--json") {
                for line in running.lines.withLock({ $0 }) {
                    #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) is [String: Any], "\(name): not a JSON object: \(line)")
                }
            }
        }
    }

    /// The harness's key pair for `role` written as a key file in the daemon's folder ("ROLE.key").
    private func keyFile(_ daemon: DaemonHarness, _ role: ClientRole) throws -> String {
        let keyFile = daemon.directory.appendingPathComponent("\(role.rawValue).key").path
        try CurveKeyFile.writeSecret(try #require(daemon.clientKeys[role]), to: keyFile, comment: "test \(role.rawValue)")
        return keyFile
    }

    /// The fixture's catalog written as `name` in the daemon's folder; its path.
    private func fixtureCatalog(in daemon: DaemonHarness, named name: String) throws -> String {
        let path = daemon.directory.appendingPathComponent(name).path
        try Data(DaemonFixture.shared.catalogBytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Waits until the box follows the programme: its snapshot names piece 1 (what `remote state`
    /// shows as now playing, and what a library add from the last match keeps).
    private func waitUntilFollowing(_ daemon: DaemonHarness) async throws {
        let client = try daemon.client(.viewer)
        defer { client.close() }
        try await eventually("the box follows the programme", every: .milliseconds(100)) {
            try await client.call(Methods.Session.getSnapshot, Earshot_V1_GetSnapshotRequest()).currentMatch.mediaItem.id == "piece1"
        }
    }

    /// The event subscriptions the box has taken so far.
    private func subscriptionCount(_ daemon: DaemonHarness) async throws -> UInt64 {
        let client = try daemon.client(.admin)
        defer { client.close() }
        return try await client.call(Methods.Health.getStats, Earshot_V1_GetStatsRequest()).counters["events_subscriptions", default: 0]
    }

    /// The established TCP connections of process `pid` to `port` on this machine (its sockets'
    /// inodes in /proc/PID/fd, matched in /proc/net/tcp).
    static func connections(of pid: Int32, toPort port: Int) -> Int {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        let inodes = Set(fds.compactMap { fd -> String? in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)"),
                  target.hasPrefix("socket:[") else { return nil }
            return String(target.dropFirst("socket:[".count).dropLast())
        })
        var count = 0
        for line in (ProcFile.text("/proc/net/tcp") ?? "").split(separator: "\n").dropFirst() {
            // sl, local address, remote address (hex ip:port), state (01: ESTABLISHED), …, inode (10th)
            let fields = line.split(separator: " ")
            guard fields.count > 9, fields[3] == "01", fields[2].split(separator: ":").last.flatMap({ Int($0, radix: 16) }) == port,
                  inodes.contains(String(fields[9])) else { continue }
            count += 1
        }
        return count
    }

    private func earshotPath() throws -> String {
        ((try DaemonHarness.executable()) as NSString).deletingLastPathComponent + "/earshot"
    }

    /// A box that refuses the client's key, a wrong server key and no box at all: `remote
    /// catalog push` and `remote match` each end within their --timeout (a refusal at once),
    /// say which it is, and exit 5; a push is not tried again when the box was never reached.
    @Test func refusalsEndWithinTheTimeoutAndSayWhich() async throws {
        let daemon = try await DaemonHarness()
        let dir = daemon.directory.path
        let stranger = dir + "/stranger.key"
        try CurveKeyFile.writeSecret(try CurveKeyPair.generate(), to: stranger, comment: "not allowed")
        let wrongServer = dir + "/wrong-server.pub"
        try CurveKeyFile.writePublic(try CurveKeyPair.generate().publicKey, to: wrongServer, comment: "not the box's")
        let admin = try keyFile(daemon, .admin)
        let catalog = try fixtureCatalog(in: daemon, named: "show.earcat")
        let serverKey = "--server-key=" + (try #require(daemon.serverPublicKey))

        let cases: [(arguments: [String], within: Double, says: String)] = [
            (["remote", "catalog", "push", catalog, "--server", daemon.rpcEndpoint, serverKey, "--key", stranger, "--timeout", "5"],
             4, "refused this client's key (not in its allow-list?)"),
            (["remote", "catalog", "push", catalog, "--server", daemon.rpcEndpoint, "--server-key", wrongServer, "--key", admin, "--timeout", "3"],
             6, "no CURVE handshake with \(daemon.rpcEndpoint): wrong server key?"),
            (["remote", "match", "--server", daemon.rpcEndpoint, serverKey, "--key", stranger, "--timeout", "5"],
             4, "refused this client's key (not in its allow-list?)"),
            (["remote", "match", "--server", "tcp://127.0.0.1:9", serverKey, "--key", admin, "--timeout", "2"],
             5, "no answer from tcp://127.0.0.1:9"),
        ]
        for c in cases {
            let start = Date()
            let run = try earshot(c.arguments)
            let took = Date().timeIntervalSince(start)
            let name = c.arguments.prefix(3).joined(separator: " ")
            #expect(run.status == 5, "\(name): \(run.err)")
            #expect(run.err.contains(c.says), "\(name): \(run.err)")
            #expect(took < c.within, "\(name) took \(took) s")
        }
    }

    /// Ctrl-C in the middle of a push ends it at once with the one command that resumes it,
    /// quoted for the shell; that command, run by a shell, finishes the push.
    @Test func anInterruptedPushSaysHowToResume() async throws {
        let daemon = try await DaemonHarness()
        let admin = try keyFile(daemon, .admin)
        let catalog = try fixtureCatalog(in: daemon, named: "my show.earcat")
        // The box stops answering, so the push is under way when Ctrl-C comes.
        kill(daemon.process.processIdentifier, SIGSTOP)
        let push = Process(), errors = Pipe()
        push.executableURL = URL(fileURLWithPath: try earshotPath())
        push.arguments = ["remote", "catalog", "push", catalog, "--name", "show2", "--server", daemon.rpcEndpoint,
                          "--server-key=" + (try #require(daemon.serverPublicKey)), "--key", admin]
        push.standardOutput = FileHandle.nullDevice
        push.standardError = errors
        try push.run()
        let port = try #require(daemon.rpcEndpoint.split(separator: ":").last.flatMap { Int($0) })
        try await eventually("the push connects to the stopped box") { Self.connections(of: push.processIdentifier, toPort: port) > 0 }
        kill(push.processIdentifier, SIGINT)
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        push.waitUntilExit()
        kill(daemon.process.processIdentifier, SIGCONT)
        #expect(push.terminationReason == .exit && push.terminationStatus == 5, "\(push.terminationStatus) \(stderr)")
        let resume = try #require(stderr.components(separatedBy: "Resume with: ").last?.split(separator: "\n").first.map(String.init),
                                  "\(stderr)")
        #expect(resume.hasPrefix("earshot remote catalog push '\(catalog)' --name show2 --server \(daemon.rpcEndpoint) ")
                && resume.contains("--server-key=") && resume.hasSuffix(" --key \(admin)"), "\(resume)")

        let shell = Process(), out = Pipe()
        shell.executableURL = URL(fileURLWithPath: "/bin/sh")
        shell.arguments = ["-c", "PATH=\((try earshotPath() as NSString).deletingLastPathComponent):$PATH; " + resume]
        shell.standardOutput = out
        shell.standardError = FileHandle.nullDevice
        try shell.run()
        let said = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        shell.waitUntilExit()
        #expect(shell.terminationStatus == 0 && said.contains("show2"), "\(said)")
    }

    @Test func noDaemonIsAClearErrorNotAHang() throws {
        let run = try earshot(["remote", "match", "--server", "tcp://127.0.0.1:9", "--timeout", "1"])
        #expect(run.status == 5)
        #expect(run.err.contains("tcp://127.0.0.1:9"))
        #expect(run.err.contains("DEADLINE_EXCEEDED"))
        let usage = try earshot(["remote", "match", "--server", "http://x"])
        #expect(usage.status == 2)
        #expect(usage.err.contains("--server must look like tcp://host:port"))
    }
}

/// An `earshot` command running with stdout on a pipe: its lines as they arrive.
final class FollowingCommand: @unchecked Sendable {
    let process = Process()
    let lines = Locked<[String]>([])
    /// Bytes after the last line break.
    let partial = Locked<[UInt8]>([])
    private let reader: Thread
    private let done = DispatchSemaphore(value: 0)

    init(_ binary: String, _ arguments: [String]) throws {
        let out = Pipe()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        let (lines, partial, done) = (self.lines, self.partial, self.done)
        reader = Thread {
            let handle = out.fileHandleForReading
            while true {
                let data = handle.availableData
                if data.isEmpty { break }
                partial.withLock { rest in
                    rest += data
                    while let end = rest.firstIndex(of: 10) {
                        let line = String(decoding: rest[..<end], as: UTF8.self)
                        rest.removeSubrange(...end)
                        if !line.isEmpty { lines.withLock { $0.append(line) } }
                    }
                }
            }
            done.signal()
        }
        try process.run()
        reader.start()
    }

    /// Waits until `count` non-empty lines have come.
    func waitForLines(_ count: Int, _ what: String) async throws {
        try await eventually(what) { lines.withLock { $0.count } >= count }
    }

    /// Waits for the process to end and its output to be read, for up to `seconds`; SIGKILL after.
    func finish(seconds: Double) async -> Bool {
        let ended = (try? await eventually("the command ends", within: .seconds(seconds)) { done.wait(timeout: .now()) == .success }) != nil
        if !ended { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        return ended
    }
}
