import ArgumentParser
import Dispatch
import EarshotSync
import EarshotTransport
import EarshotWire
import Foundation

/// `earshot remote watch`: a live dashboard of the daemon's state, kept from its events.
///
/// It follows the late-joiner recipe of docs/PROTOCOL.md: subscribe first, then take a snapshot,
/// drop events at or below the snapshot's sequence numbers, and take a new snapshot on a gap, an
/// epoch change (the daemon restarted) or when heartbeats stop.
struct RemoteWatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "A live dashboard: session state, what is playing and its advancing offset.",
        discussion: """
            On a terminal the dashboard redraws in place four times a second; otherwise it prints \
            the state again whenever it changes. Ends with Ctrl-C or after --duration.
            """)

    @OptionGroup var remote: RemoteOptions
    @Option(help: ArgumentHelp("The daemon's event endpoint (default: the --server port + 1).", valueName: "tcp://host:port"))
    var events: String?
    @Option(help: ArgumentHelp("Stop after this many seconds.", valueName: "seconds")) var duration: Double?

    func eventsEndpoint() throws(CLIFailure) -> String {
        if let events { return events }
        guard let colon = remote.server.lastIndex(of: ":"), let port = Int(remote.server[remote.server.index(after: colon)...]) else {
            throw CLIFailure("cannot derive the events endpoint from \(remote.server); give --events", status: .usage)
        }
        return remote.server[..<colon] + ":\(port + 1)"
    }

    func run() throws {
        let remote = self.remote
        let endpoint = try eventsEndpoint()
        let board = Dashboard(inPlace: Terminal.stdoutIsTerminal)
        signal(SIGINT, SIG_IGN)
        let stop = DispatchSemaphore(value: 0)
        let interrupt = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        interrupt.setEventHandler { stop.signal() }
        interrupt.resume()
        if let duration { DispatchQueue.global().asyncAfter(deadline: .now() + duration) { stop.signal() } }

        let subscriber: EventSubscriber
        let security = try remote.security()
        do {
            subscriber = try EventSubscriber(endpoint: endpoint, topics: [Topics.session, Topics.match, Topics.health, Topics.heartbeat],
                                             security: security)
        } catch {
            throw CLIFailure("\(endpoint): \(error)", status: .usage)
        }
        let client = try remote.client()
        let follower = Task.detached { () throws in
            try await board.resync(client, remote)
            for await event in subscriber.events {
                if board.apply(event) == .needsSnapshot { try await board.resync(client, remote) }
            }
        }
        let ticker = DispatchSource.makeTimerSource(queue: .global())
        ticker.schedule(deadline: .now() + 0.25, repeating: 0.25)
        ticker.setEventHandler {
            if board.heartbeatOverdue {
                Task.detached { try? await board.resync(client, remote) }
            }
            board.render()
        }
        ticker.resume()
        let failure = Task.detached { () -> CLIFailure? in
            do { try await follower.value } catch let error as CLIFailure { return error } catch {}
            return nil
        }
        DispatchQueue.global().async {
            Task { if await failure.value != nil { stop.signal() } }
        }
        stop.wait()
        ticker.cancel()
        follower.cancel()
        subscriber.close()
        client.close()
        board.render(final: true)
        if let error = runBlockingOptional({ await failure.value }) { throw error }
    }
}

private func runBlockingOptional<T: Sendable>(_ body: @escaping @Sendable () async -> T?) -> T? {
    let box = BlockingBox<T>()
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        let v = await body()
        box.value.withLock { $0 = v }
        done.signal()
    }
    _ = done.wait(timeout: .now() + 1)
    return box.value.withLock { $0 }
}

/// The dashboard's state: a snapshot kept current by events.
final class Dashboard: Sendable {
    enum Applied { case applied, dropped, needsSnapshot }

    private struct State {
        var snapshot: Earshot_V1_SessionSnapshot?
        var heads: [String: UInt64] = [:]
        var lastHeartbeat = Date()
        var lastResync = Date.distantPast
        var drawnLines = 0
        var lastText = ""
        /// Why the daemon does not serve (its health message), nil while it serves.
        var notServing: String?
    }
    private let state = Locked(State())
    private let inPlace: Bool

    init(inPlace: Bool) {
        self.inPlace = inPlace
    }

    /// No heartbeat for 3 s: the daemon or the network may be gone (rate-limited to one try a second).
    var heartbeatOverdue: Bool {
        state.withLock { s in
            guard Date().timeIntervalSince(s.lastHeartbeat) > 3, Date().timeIntervalSince(s.lastResync) > 1 else { return false }
            s.lastResync = Date()
            return true
        }
    }

    func resync(_ client: RpcClient, _ remote: RemoteOptions) async throws {
        let snapshot: Earshot_V1_SessionSnapshot
        do throws(RpcError) { snapshot = try await client.call(Methods.Session.getSnapshot, Earshot_V1_GetSnapshotRequest()) } catch {
            if error.code == .deadlineExceeded || error.code == .unavailable {
                state.withLock { $0.snapshot = nil }
                return  // shown as "no answer"; the next overdue heartbeat retries
            }
            throw remote.failure(error)
        }
        state.withLock { s in
            s.snapshot = snapshot
            s.heads = snapshot.topicSeq
            s.lastHeartbeat = Date()
            s.lastResync = Date()
        }
    }

    func apply(_ event: Earshot_V1_EventEnvelope) -> Applied {
        state.withLock { s in
            guard var snapshot = s.snapshot else { return .dropped }
            if event.epoch != snapshot.epoch { return .needsSnapshot }
            if case .heartbeat(let hb) = event.body {
                s.lastHeartbeat = Date()
                // A topic that moved on without us means lost events.
                for (topic, head) in hb.heads where topic != Topics.heartbeat && head > s.heads[topic, default: 0] {
                    return .needsSnapshot
                }
                return .applied
            }
            let known = s.heads[event.topic, default: 0]
            if event.seq <= known { return .dropped }
            if event.seq > known + 1 { return .needsSnapshot }
            s.heads[event.topic] = event.seq
            switch event.body {
            case .session(let new):
                snapshot = new
            case .match(let result):
                if result.outcome == .match, let top = result.items.first {
                    snapshot.currentMatch = top
                    snapshot.takenAtUnixMs = result.madeAtUnixMs
                } else if result.outcome == .noMatch {
                    snapshot.clearCurrentMatch()
                }
            case .health(let h):
                // A daemon that gives no message (an older one) went NOT_SERVING only to stop.
                s.notServing = h.status == .serving ? nil : (h.message.isEmpty ? "shutting down" : h.message)
            default:
                break
            }
            s.snapshot = snapshot
            return .applied
        }
    }

    func render(final: Bool = false) {
        let text = state.withLock { s -> String in
            guard let snapshot = s.snapshot else { return "waiting for the daemon…" }
            var lines = RemoteFormat.snapshot(snapshot)
            if let reason = s.notServing { lines.insert("daemon: not serving (\(reason))", at: 0) }
            return lines.joined(separator: "\n")
        }
        state.withLock { s in
            if inPlace && !final {
                var out = ""
                if s.drawnLines > 0 { out += "\u{1B}[\(s.drawnLines)F\u{1B}[J" }
                out += text + "\n"
                FileHandle.standardOutput.write(Data(out.utf8))
                s.drawnLines = text.split(separator: "\n", omittingEmptySubsequences: false).count
            } else {
                // Off a terminal: print when the state changes (not every tick of the offset).
                let key = text.split(separator: "\n").map { $0.hasPrefix("now playing") ? String($0.prefix(while: { $0 != "]" })) : String($0) }
                    .joined(separator: "\n")
                guard key != s.lastText || final else { return }
                s.lastText = key
                print(text + "\n")
            }
        }
    }
}
