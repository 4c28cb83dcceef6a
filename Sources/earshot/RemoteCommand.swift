import ArgumentParser
import Dispatch
import EarshotTransport
import EarshotWire
import Foundation
import Synchronization

/// `earshot remote`: drive an `earshotd` over the network, as a thin client.
struct RemoteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remote",
        abstract: "Talk to an earshotd daemon: prepare, match, stream results, show or watch its state.",
        discussion: """
            The daemon answers RPC on --server (its rpc.listen, default tcp://127.0.0.1:7400) and \
            publishes events on --events (its events.listen; by default the --server port + 1).

            Examples:
              earshot remote prepare
              earshot remote match --server tcp://tv-box.local:7400
              earshot remote stream --json
              earshot remote state
              earshot remote watch --server tcp://tv-box.local:7400

            Exit status: 0 on success (for `match`: a match), 1 when `match` found none, 2 on \
            usage errors, 5 when the daemon did not answer in time or answered with an error \
            (the message says which, with the gRPC status name).
            """,
        subcommands: [RemotePrepareCommand.self, RemoteMatchCommand.self, RemoteStreamCommand.self,
                      RemoteStateCommand.self, RemoteWatchCommand.self]
    )
}

/// Options every `remote` command takes.
struct RemoteOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The daemon's RPC endpoint.", valueName: "tcp://host:port"))
    var server = "tcp://127.0.0.1:7400"

    @Option(help: ArgumentHelp("Seconds to wait for an answer before giving up.", valueName: "seconds"))
    var timeout: Double = 15

    func validate() throws {
        guard server.hasPrefix("tcp://") || server.hasPrefix("ipc://") else {
            throw ValidationError("--server must look like tcp://host:port (or ipc://path), not \(server)")
        }
        guard timeout.isFinite, timeout > 0 else { throw ValidationError("--timeout must be a positive number of seconds") }
    }

    func client() throws(CLIFailure) -> RpcClient {
        do {
            var configuration = RpcClient.Configuration()
            configuration.defaultTimeout = .milliseconds(Int(timeout * 1000))
            return try RpcClient(endpoint: server, configuration: configuration)
        } catch {
            throw CLIFailure("\(server): \(error)", status: .usage)
        }
    }

    /// Maps an RPC failure to one line naming the server and the status.
    func failure(_ error: RpcError) -> CLIFailure {
        CLIFailure("\(server): \(error.code): \(error.message)", status: .remote)
    }
}

/// Runs async client code from a synchronous command and waits for it.
func runBlocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let outcome = BlockingBox<Result<T, any Error>>()
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        do {
            let value = try await body()
            outcome.value.withLock { $0 = .success(value) }
        } catch {
            outcome.value.withLock { $0 = .failure(error) }
        }
        done.signal()
    }
    done.wait()
    return try outcome.value.withLock { $0! }.get()
}

/// Carries a value from a task back to the thread that waits for it.
final class BlockingBox<T: Sendable>: Sendable {
    let value = Mutex<T?>(nil)
}
