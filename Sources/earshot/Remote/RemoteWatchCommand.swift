import ArgumentParser
import Dispatch
import EarshotClient
import EarshotSync
import EarshotTransport
import EarshotWire
import Foundation

/// `earshot remote watch`: a live dashboard of the daemon's state, kept from its events.
///
/// It follows the late-joiner recipe of docs/PROTOCOL.md: subscribe first, then take a snapshot,
/// drop events at or below the snapshot's sequence numbers, and take a new snapshot on a gap, an
/// epoch change (the daemon restarted) or when heartbeats stop. The rules are EarshotClient's
/// `SessionFollower`; this file wires it to the sockets and draws it.
struct RemoteWatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "A live dashboard: session state, what is playing and its advancing offset.",
        discussion: """
            On a terminal the dashboard redraws in place four times a second; otherwise it prints \
            the state again whenever it changes. Ends with Ctrl-C or after --duration.
            """)

    @OptionGroup var remote: RemoteOptions
    @Option(help: ArgumentHelp("The daemon's event endpoint (default: the events port a box found by name announces, else the --server port + 1).", valueName: "tcp://host:port"))
    var events: String?
    @Option(help: ArgumentHelp("Stop after this many seconds.", valueName: "seconds")) var duration: Double?

    func run() throws {
        let remote = self.remote
        let endpoint = try remote.eventsEndpoint(given: events)
        let board = Dashboard(inPlace: Terminal.stdoutIsTerminal)
        let stop = DispatchSemaphore(value: 0)
        let signals = StopSignals { _ in stop.signal() }
        defer { signals.restore() }
        if let duration { DispatchQueue.global().asyncAfter(deadline: .now() + duration) { stop.signal() } }

        let subscriber: EventSubscriber
        let security = try remote.security()
        do {
            subscriber = try EventSubscriber(endpoint: endpoint, topics: board.subscriptions, security: security)
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

/// The dashboard: a ``SessionFollower`` (the late-joiner rules, in EarshotClient) fed by the
/// command's loop, and its drawing on the terminal.
final class Dashboard: Sendable {
    private struct Screen {
        var drawnLines = 0
        var lastText = ""
    }
    private let follower = Locked(SessionFollower())
    private let screen = Locked(Screen())
    private let inPlace: Bool

    init(inPlace: Bool) {
        self.inPlace = inPlace
    }

    /// The topics to subscribe to.
    var subscriptions: [String] { follower.withLock { $0.subscriptions } }

    /// No heartbeat for 3 s: the daemon or the network may be gone (rate-limited to one try a second).
    var heartbeatOverdue: Bool { follower.withLock { $0.heartbeatOverdue() } }

    func resync(_ client: RpcClient, _ remote: RemoteOptions) async throws {
        let snapshot: Earshot_V1_SessionSnapshot
        do throws(RpcError) { snapshot = try await client.call(Methods.Session.getSnapshot, Earshot_V1_GetSnapshotRequest()) } catch {
            if error.code == .deadlineExceeded || error.code == .unavailable {
                follower.withLock { $0.forget() }
                return  // shown as "no answer"; the next overdue heartbeat retries
            }
            throw remote.failure(error)
        }
        follower.withLock { $0.reset(with: snapshot) }
    }

    func apply(_ event: Earshot_V1_EventEnvelope) -> EventOutcome {
        follower.withLock { $0.apply(event) }
    }

    func render(final: Bool = false) {
        let text = follower.withLock { f -> String in
            guard let snapshot = f.snapshot else { return "waiting for the daemon…" }
            var lines = RemoteFormat.snapshot(snapshot)
            if let reason = f.notServing { lines.insert("daemon: not serving (\(reason))", at: 0) }
            lines += f.libraryNotices.map(LibraryFormat.notice)
            return lines.joined(separator: "\n")
        }
        screen.withLock { s in
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
