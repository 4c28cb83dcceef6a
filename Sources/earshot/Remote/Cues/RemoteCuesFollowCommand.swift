import ArgumentParser
import EarshotAuthoring
import EarshotCore
import EarshotSync
import EarshotTransport
import EarshotWire
import Foundation

/// `earshot remote cues follow` (the default)
struct RemoteCuesFollowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "follow",
        abstract: "Print cue events as the daemon fires them, with the current and next cue and a countdown.")

    @OptionGroup var remote: RemoteOptions
    @Flag(help: "One JSON object (CueEvent) per line.") var json = false
    @Option(help: ArgumentHelp("Stop after this many seconds.", valueName: "seconds")) var duration: Double?

    func run() throws {
        let (remote, json, duration) = (self.remote, self.json, self.duration)
        let live = !json && Terminal.stdoutIsTerminal
        let state = Locked<Earshot_V1_CueState?>(nil)
        let output = Locked(())
        @Sendable func statusLine() {
            guard live, let s = state.withLock({ $0 }) else { return }
            output.withLock { _ in Terminal.outputRaw("\r\u{1B}[2K" + Terminal.oneLine(CueFormat.status(s))) }
        }
        defer { if live { print() } }
        try runUntilInterrupted(duration: duration) {
            let client = try remote.client()
            defer { client.close() }
            let limit = Duration.milliseconds(Int((duration ?? 86_400) * 1000) + 5000)
            let ticker = Task {
                while !Task.isCancelled {
                    statusLine()
                    try? await Task.sleep(for: .milliseconds(200))
                }
            }
            defer { ticker.cancel() }
            do {
                for try await event in client.stream(Methods.Cues.streamCues, Earshot_V1_StreamCuesRequest(), timeout: limit) {
                    if json {
                        print(RemoteFormat.json(event))
                        continue
                    }
                    if event.kind == .state {
                        state.withLock { $0 = event.state }
                    } else {
                        let stamp = ISODate.render(Date())
                        output.withLock { _ in
                            if live { Terminal.outputRaw("\r\u{1B}[2K") }
                            print("\(stamp)  \(CueFormat.event(event))")
                        }
                        // The current and next cue after this event, from the daemon.
                        if let s = try? await client.call(Methods.Cues.getCurrent, Earshot_V1_GetCurrentCuesRequest()) {
                            state.withLock { $0 = s }
                        }
                    }
                    if !live, event.kind == .state || event.kind == .started || event.kind == .ended {
                        if let s = state.withLock({ $0 }) { print("  " + CueFormat.status(s)) }
                    }
                    statusLine()
                }
            } catch let error as RpcError {
                if error.code != .cancelled { throw remote.failure(error) }
            } catch {
                throw CLIFailure("\(remote.server): \(error)", status: .remote)
            }
        }
    }
}
