import ArgumentParser
import EarshotCore
import EarshotCrypto
import EarshotStore
import EarshotSync
import EarshotSystem
import EarshotTransport
import EarshotWire
import Foundation

/// `earshot remote catalog push`: upload a catalog to one box or many, resumably.
struct RemoteCatalogPushCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "Upload a catalog to one or many boxes; they verify it and swap it in while matching.",
        discussion: """
            The file goes up in chunks at explicit offsets; the box acknowledges each one after \
            it is on its disk. Interrupted (Ctrl-C, a dropped network, a box restarting), run the \
            same command again: it resumes from the last acknowledged byte. On commit the box \
            checks the SHA-256, verifies the catalog like `earshot catalog display` (and its \
            author signature, if the box requires one), renames it into its catalogs folder and \
            swaps it in while matches continue. A name that exists is replaced as a new version.

            Several boxes: repeat --server, or list them in --servers-file (one per line: the \
            endpoint, then optionally that box's server public key as Z85 text or a file; or a \
            box's name on the LAN alone on its line, whose announced key is used unless \
            --server-key or EARSHOT_SERVER_KEY gives one; a line starting with '#' is a comment). They are pushed to in parallel, with a line of progress each, then a \
            summary table. The exit status is 5 if any box failed.

            Examples:
              earshot remote catalog push show.earcat --enable
              earshot remote catalog push show.earcat --name show --server tcp://tv1:7400 --server tcp://tv2:7400
              earshot remote catalog push show.earcat --servers-file fleet.txt --key admin.key
            """)

    @Argument(help: ArgumentHelp("The catalog file to upload.", valueName: "file.earcat"))
    var file: String

    @Option(help: ArgumentHelp("The name on the box (default: the file name without .earcat).", valueName: "name"))
    var name: String?

    @Flag(help: "Enable the catalog once installed (a new name; a replaced catalog keeps its state).")
    var enable = false

    @Option(name: .customLong("server"), help: ArgumentHelp(
        "A box's RPC endpoint or its name on the LAN; repeat for several (default tcp://127.0.0.1:7400).", valueName: "tcp://host:port|name"))
    var servers: [String] = []

    @Option(name: .customLong("servers-file"), help: ArgumentHelp(
        "A file of boxes: one endpoint per line, optionally followed by its server public key, or a box's name on the LAN alone on its line.", valueName: "file"))
    var serversFile: String?

    @Option(name: .customLong("server-key"), help: ArgumentHelp(
        "The boxes' public key (text or file) where --servers-file gives none; env EARSHOT_SERVER_KEY.", valueName: "Z85|file"))
    var serverKey: String?

    @Option(name: .customLong("key"), help: ArgumentHelp("This client's secret key file (an admin key); env EARSHOT_CLIENT_KEY.", valueName: "file"))
    var clientKey: String?

    @Option(help: ArgumentHelp("Seconds each call may take (the commit verifies the whole file).", valueName: "seconds"))
    var timeout: Double = 60

    @Option(name: .customLong("chunk-kib"), help: ArgumentHelp("Chunk size in KiB (the frame limit is 4096).", valueName: "KiB"))
    var chunkKiB = 1024

    @Flag(help: "No progress lines.") var quiet = false
    @Flag(help: "Print the outcome per box as JSON: box, ok, result, catalog, version, replaced, sent_bytes, seconds.")
    var json = false

    func validate() throws {
        guard (1...3072).contains(chunkKiB) else { throw ValidationError("--chunk-kib must be within 1…3072") }
        guard timeout.isFinite, timeout > 0 else { throw ValidationError("--timeout must be a positive number of seconds") }
        for s in servers where !BoxEndpoint.isEndpoint(s) && !BoxEndpoint.isName(s) {
            throw ValidationError("--server must look like tcp://host:port (or ipc://path) or name a box on the LAN, not \(s)")
        }
    }

    func run() throws {
        let catalogName = name ?? ((file as NSString).lastPathComponent as NSString).deletingPathExtension
        if let problem = CatalogName.problem(catalogName) { throw CLIFailure(problem + " (give --name)", status: .usage) }
        let boxes = try targets()
        // Verified here first: a file the boxes would refuse is not sent to any of them.
        let verified = try CatalogFile.verify(file)
        let upload = try CatalogUpload(path: file, name: catalogName, enable: enable, verified: verified,
                                       chunkBytes: chunkKiB * 1024)
        // One box: its result line (or error) says how it ended, so progress never repeats it.
        let progress = PushProgress(boxes: boxes.map(\.label), total: upload.size, quiet: quiet, showsEnd: boxes.count > 1)
        let timeout = Duration.milliseconds(Int(self.timeout * 1000))
        // Each box keeps the bytes it acknowledged: the same command resumes where they stop.
        let signals = StopSignals { _ in
            progress.end()
            Terminal.error("earshot: interrupted; each box keeps what it acknowledged (for a day by default: catalogs.upload_expiry_s). "
                           + "Resume with: \(Format.commandLine(CommandLine.arguments))")
            Foundation.exit(ExitStatus.remote.rawValue)
        }
        defer { signals.restore() }
        let outcomes = try runBlocking { () async -> [PushOutcome] in
            await withTaskGroup(of: (Int, PushOutcome).self) { group in
                for (index, box) in boxes.enumerated() {
                    group.addTask {
                        (index, await upload.push(to: box, timeout: timeout) { held, resumedFrom in
                            progress.update(index, held: held, resumedFrom: resumedFrom)
                        })
                    }
                }
                var outcomes = [PushOutcome?](repeating: nil, count: boxes.count)
                for await (index, outcome) in group {
                    progress.finish(index, outcome.summary)
                    outcomes[index] = outcome
                }
                return outcomes.map { $0! }
            }
        }
        progress.end()
        let failed = outcomes.filter(\.failed).count
        if json {
            print(Format.jsonText(.array(zip(boxes, outcomes).map { box, o in o.json(box: box.endpoint) })))
        } else if boxes.count == 1, let only = outcomes.first {
            if case .failed(let message) = only.result { throw CLIFailure("\(boxes[0].label): \(message)", status: .remote) }
            print("\(boxes[0].label): \(only.summary)")
            return
        } else {
            // A long refusal would stretch every row: the table cuts it, and the full text follows.
            let rows = zip(boxes, outcomes).map { box, o in
                [box.label, Self.cut(o.summary), RemoteFormat.bytes(o.sentBytes), String(format: "%.1f s", o.seconds),
                 o.seconds > 0 ? RemoteFormat.bytes(Int(Double(o.sentBytes) / o.seconds)) + "/s" : "-"]
            }
            RemoteFormat.table(["BOX", "RESULT", "SENT", "TIME", "RATE"], rows).forEach { print($0) }
            for (box, o) in zip(boxes, outcomes) where Self.cut(o.summary) != o.summary { print("\(box.label): \(o.summary)") }
        }
        if failed > 0 { throw CLIFailure("\(failed) of \(boxes.count) boxes failed", status: .remote) }
    }

    /// The widest RESULT cell of the fleet table.
    static let resultWidth = 60

    /// `text` cut to `resultWidth` characters, ending "…" when cut.
    static func cut(_ text: String) -> String {
        text.count <= resultWidth ? text : String(text.prefix(resultWidth - 1)) + "…"
    }

    /// The boxes, each with its CURVE keys (nil: plain TCP).
    private func targets() throws(CLIFailure) -> [BoxEndpoint] {
        try BoxEndpoint.fleet(servers: servers, serversFile: serversFile, serverKey: serverKey, clientKey: clientKey,
                              keyKind: "an admin client key")
    }
}


/// How one box's push ended.
struct PushOutcome: Sendable {
    enum Result: Sendable {
        case installed(Earshot_V1_CommitUploadResponse)
        case failed(String)
    }
    let result: Result
    /// Bytes this run sent (a resumed push sends only the rest).
    let sentBytes: Int
    let seconds: Double

    var failed: Bool { if case .failed = result { true } else { false } }

    /// The outcome for `--json`.
    func json(box: String) -> JSONValue {
        var object: [String: JSONValue] = [
            "box": .string(box), "ok": .bool(!failed), "result": .string(summary),
            "sent_bytes": .number(Double(sentBytes)), "seconds": .number(seconds),
        ]
        switch result {
        case .installed(let r):
            object["catalog"] = .string(r.catalog.name)
            object["version"] = .number(Double(r.catalog.version))
            object["replaced"] = .bool(r.replaced)
        case .failed(let message):
            object["error"] = .string(message)
        }
        return .object(object)
    }

    var summary: String {
        switch result {
        case .installed(let r):
            let c = r.catalog
            return "\(r.replaced ? "replaced" : "installed") \(c.name) v\(c.version) (\(RemoteFormat.catalogState(c)))"
        case .failed(let message):
            return "FAILED: \(message)"
        }
    }
}

/// One catalog file ready to push: mapped, with its digest and signer.
final class CatalogUpload: Sendable {
    let name: String
    let enable: Bool
    let size: Int
    let sha256: [UInt8]
    let signerKey: [UInt8]?
    let chunkBytes: Int
    private let file: MappedFile

    init(path: String, name: String, enable: Bool, verified: CatalogCheck.Verified, chunkBytes: Int) throws(CLIFailure) {
        do { file = try MappedFile(path: path) } catch { throw CLIFailure.badInput(path, error) }
        guard file.bytes.count == verified.byteCount else {
            throw CLIFailure.badInput(path, "the file changed while it was being read; run the command again")
        }
        self.name = name
        self.enable = enable
        size = verified.byteCount
        sha256 = verified.sha256
        signerKey = verified.catalog.signature?.publicKey
        self.chunkBytes = chunkBytes
    }

    /// Transient failures of a box that was reached (a restart, a dropped link) are retried this
    /// many times; each retry begins again, which resumes the upload where the box has it.
    static let attempts = 4

    func push(to box: BoxEndpoint, timeout: Duration, progress: @escaping @Sendable (Int, Int) -> Void) async -> PushOutcome {
        let started = ContinuousClock.now
        var sent = 0
        var lastError = ""
        for attempt in 1...Self.attempts {
            if attempt > 1 { try? await Task.sleep(for: .milliseconds(500 * (1 << (attempt - 2)))) }
            let client: RpcClient
            do {
                var configuration = RpcClient.Configuration()
                configuration.security = box.security
                configuration.defaultTimeout = timeout
                client = try RpcClient(endpoint: box.endpoint, configuration: configuration)
            } catch {
                return PushOutcome(result: .failed("\(error)"), sentBytes: sent, seconds: Self.seconds(since: started))
            }
            defer { client.close() }
            do throws(RpcError) {
                let reply = try await pushOnce(client, sent: &sent, progress: progress)
                return PushOutcome(result: .installed(reply), sentBytes: sent, seconds: Self.seconds(since: started))
            } catch {
                lastError = "\(error.code): \(error.message)"
                // Only what can pass is tried again: a box that was reached and then dropped the
                // link or restarted. One never reached (down, wrong address, refused key, wrong
                // server key) would fail the same way again.
                guard client.hasConnected, error.code == .unavailable || error.code == .deadlineExceeded || error.code == .aborted else { break }
            }
        }
        return PushOutcome(result: .failed(lastError), sentBytes: sent, seconds: Self.seconds(since: started))
    }

    private func pushOnce(_ client: RpcClient, sent: inout Int, progress: @Sendable (Int, Int) -> Void) async throws(RpcError) -> Earshot_V1_CommitUploadResponse {
        var begin = Earshot_V1_BeginUploadRequest()
        begin.name = name
        begin.size = UInt64(size)
        begin.sha256 = Data(sha256)
        begin.enable = enable
        if let signerKey { begin.signerKey = Data(signerKey) }
        let status = try await client.call(Methods.Catalogs.beginUpload, begin)
        // Offsets come from the box: kept within the file, and a box that stops taking bytes ends
        // the push instead of looping.
        var held = min(size, Int(clamping: status.offset))
        let resumedFrom = held
        progress(held, resumedFrom)
        var chunk = Earshot_V1_UploadChunkRequest()
        chunk.uploadID = status.uploadID
        var stalled = 0
        while held < size {
            let end = min(size, held + chunkBytes)
            chunk.offset = UInt64(held)
            chunk.data = Data(bytes: file.bytes.baseAddress! + held, count: end - held)
            let now: Int
            do {
                let reply = try await client.call(Methods.Catalogs.uploadChunk, chunk)
                sent += end - held
                now = min(size, Int(clamping: reply.offset))
            } catch where error.code == .outOfRange {
                // The box holds less (or more) than this side thought: go on from what it has.
                var ask = Earshot_V1_UploadRequest()
                ask.uploadID = status.uploadID
                now = min(size, Int(clamping: try await client.call(Methods.Catalogs.getUpload, ask).offset))
            }
            stalled = now > held ? 0 : stalled + 1
            guard stalled < 8 else {
                throw RpcError(.dataLoss, "the box does not take the bytes at offset \(held) (it answered offset \(now) eight times)")
            }
            held = now
            progress(held, resumedFrom)
        }
        var commit = Earshot_V1_UploadRequest()
        commit.uploadID = status.uploadID
        return try await client.call(Methods.Catalogs.commitUpload, commit)
    }

    static func seconds(since start: ContinuousClock.Instant) -> Double {
        (ContinuousClock.now - start) / .seconds(1)
    }
}

/// Progress lines of a push on stderr: one per box, redrawn in place on a terminal (bytes, rate,
/// ETA); elsewhere a line per box at each quarter and at the end.
final class PushProgress: Sendable {
    private struct Box {
        var endpoint: String
        var held = 0
        var resumedFrom = 0
        var started = ContinuousClock.now
        var done: String?
        var quarter = -1
    }
    private let boxes: Locked<[Box]>
    private let total: Int
    private let quiet: Bool
    private let inPlace = Terminal.stderrIsTerminal
    /// Whether a box's end is a progress line of its own (several boxes; one box's end is the
    /// command's result line instead).
    private let showsEnd: Bool
    private let drawn = Locked<(lines: Int, at: ContinuousClock.Instant?)>((0, nil))

    init(boxes: [String], total: Int, quiet: Bool, showsEnd: Bool = true) {
        self.boxes = Locked(boxes.map { Box(endpoint: $0) })
        self.total = total
        self.quiet = quiet
        self.showsEnd = showsEnd
    }

    func update(_ index: Int, held: Int, resumedFrom: Int) {
        guard !quiet else { return }
        let line: String? = boxes.withLock { all in
            if all[index].held == 0 && held > 0 && resumedFrom > 0 && all[index].resumedFrom == 0 {
                all[index].resumedFrom = resumedFrom
                all[index].started = .now
            }
            all[index].held = held
            let quarter = total > 0 ? held * 4 / total : 4
            guard !inPlace, quarter != all[index].quarter else { return nil }
            all[index].quarter = quarter
            return Self.describe(all[index], total: total)
        }
        if let line { Terminal.error(line) } else if inPlace { redraw(force: false) }
    }

    func finish(_ index: Int, _ summary: String) {
        guard !quiet else { return }
        let line = boxes.withLock { all -> String in
            all[index].done = summary
            return "\(all[index].endpoint): \(summary)"
        }
        guard showsEnd else { return }
        if inPlace { redraw(force: true) } else { Terminal.error(line) }
    }

    /// The last drawing: every box's end (several boxes), or the progress line cleared (one box).
    func end() {
        guard !quiet, inPlace else { return }
        if showsEnd { return redraw(force: true) }
        drawn.withLock { d in
            guard d.lines > 0 else { return }
            Terminal.errorRaw("\u{1B}[\(d.lines)A" + String(repeating: "\r\u{1B}[K\n", count: d.lines) + "\u{1B}[\(d.lines)A")
            d = (0, .now)
        }
    }

    private func redraw(force: Bool) {
        let lines = boxes.withLock { all in all.map { b in b.done.map { "\(b.endpoint): \($0)" } ?? Self.describe(b, total: total) } }
        drawn.withLock { d in
            // At most 10 redraws a second: a terminal write per chunk would cost more than the chunk.
            if !force, let at = d.at, ContinuousClock.now - at < .milliseconds(100) { return }
            var text = d.lines > 0 ? "\u{1B}[\(d.lines)A" : ""
            for l in lines { text += "\r\u{1B}[K" + l + "\n" }
            Terminal.errorRaw(text)
            d = (lines.count, .now)
        }
    }

    private static func describe(_ b: Box, total: Int) -> String {
        let seconds = CatalogUpload.seconds(since: b.started)
        let rate = seconds > 0.05 ? Double(b.held - b.resumedFrom) / seconds : 0
        let percent = total > 0 ? b.held * 100 / total : 100
        let resumed = b.resumedFrom > 0 ? " (resumed at \(RemoteFormat.bytes(b.resumedFrom)))" : ""
        let head = "\(b.endpoint): \(percent)% \(RemoteFormat.bytes(b.held)) of \(RemoteFormat.bytes(total))"
        // Every byte on the box: what is left is its check and swap, not a transfer to time.
        if b.held >= total { return "\(head), all sent; the box checks it\(resumed)" }
        guard rate > 0 else { return "\(head), starting\(resumed)" }
        return "\(head), \(RemoteFormat.bytes(Int(rate)))/s, ETA \(Int((Double(total - b.held) / rate).rounded(.up))) s\(resumed)"
    }
}
