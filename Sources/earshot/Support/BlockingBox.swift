import ArgumentParser
import Dispatch
import EarshotSync
import EarshotTransport
import EarshotWire
import Foundation

/// Runs a following command's `body` until it ends, Ctrl-C, SIGTERM or `duration` seconds (each
/// cancels it: the stream it iterates ends CANCELLED, which is how such commands stop, with all
/// they printed written). A `CLIFailure` it throws is the command's; other errors after a cancel
/// are not.
func runUntilInterrupted(duration: Double?, _ body: @escaping @Sendable () async throws -> Void) throws {
    let task = Task.detached { try await body() }
    let signals = StopSignals { _ in task.cancel() }
    defer { signals.restore() }
    if let duration {
        DispatchQueue.global().asyncAfter(deadline: .now() + duration) { task.cancel() }
    }
    try runBlocking { () throws in
        do { try await task.value } catch let e as CLIFailure { throw e } catch {}
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
    let value = Locked<T?>(nil)
}
