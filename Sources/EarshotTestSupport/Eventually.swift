import Foundation

/// Waits for something to happen by asking again and again: calls `probe` every `interval` until
/// `condition` holds for what it returned, and returns that. After `timeout` it throws
/// `WaitTimedOut`, naming `what` it waited for, where, and the last value seen.
///
/// The one way the tests wait for a condition; a fixed sleep would wait too long when the
/// machine is idle and too short when it is busy. The timeout only bounds a failure, so it is
/// long by default: when the package's tests run on two cores, other tests can hold every
/// thread of Swift's cooperative pool for seconds, and what is waited for waits meanwhile. It
/// is not an assertion about speed (the benchmarks measure that).
///
/// The condition is asked once more after the time is up, since this task may itself have been
/// kept waiting past it.
@discardableResult
public func eventually<T>(
    _ what: String, within timeout: Duration = Polling.defaultTimeout, every interval: Duration = Polling.defaultInterval,
    fileID: StaticString = #fileID, line: UInt = #line,
    _ probe: () async throws -> T, until condition: (T) throws -> Bool
) async throws -> T {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while true {
        let late = clock.now >= deadline
        let value = try await probe()
        if try condition(value) { return value }
        if late {
            throw WaitTimedOut("\(fileID):\(line): gave up after \(Polling.seconds(timeout)) waiting until \(what)\(Polling.last(value))")
        }
        try await Task.sleep(for: interval)
    }
}

/// Waits until `condition` is true; see `eventually(_:within:every:_:until:)`.
public func eventually(
    _ what: String, within timeout: Duration = Polling.defaultTimeout, every interval: Duration = Polling.defaultInterval,
    fileID: StaticString = #fileID, line: UInt = #line,
    _ condition: () async throws -> Bool
) async throws {
    try await eventually(what, within: timeout, every: interval, fileID: fileID, line: line, condition, until: { $0 })
}

/// `eventually` for synchronous code (a test that is not `async`, a thread of its own): it keeps
/// the thread it runs on between its looks, instead of giving it back to Swift's cooperative
/// pool, where CPU-bound tests running beside it may hold every thread for a minute while a
/// device, a clock or a capture thread moves on without the test. Never call it from `async`
/// code: it would block a thread of that pool.
@discardableResult
public func eventuallyBlocking<T>(
    _ what: String, within timeout: Duration = Polling.defaultTimeout, every interval: Duration = Polling.defaultInterval,
    fileID: StaticString = #fileID, line: UInt = #line,
    _ probe: () throws -> T, until condition: (T) throws -> Bool
) throws -> T {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while true {
        let late = clock.now >= deadline
        let value = try probe()
        if try condition(value) { return value }
        if late {
            throw WaitTimedOut("\(fileID):\(line): gave up after \(Polling.seconds(timeout)) waiting until \(what)\(Polling.last(value))")
        }
        Polling.sleep(interval)
    }
}

/// Waits until `condition` is true, keeping the thread; see `eventuallyBlocking(_:within:every:_:until:)`.
public func eventuallyBlocking(
    _ what: String, within timeout: Duration = Polling.defaultTimeout, every interval: Duration = Polling.defaultInterval,
    fileID: StaticString = #fileID, line: UInt = #line,
    _ condition: () throws -> Bool
) throws {
    try eventuallyBlocking(what, within: timeout, every: interval, fileID: fileID, line: line, condition, until: { $0 })
}

/// The defaults of `eventually`.
public enum Polling {
    /// How often the condition is asked: often enough that a test does not wait for nothing,
    /// rarely enough not to take a core from what it waits for.
    public static let defaultInterval: Duration = .milliseconds(10)
    /// How long before giving up: a bound on a failure, not a measure of speed.
    public static let defaultTimeout: Duration = .seconds(60)

    static func sleep(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }

    /// "; last: …" for a failure's message (nothing for a condition's false).
    static func last<T>(_ value: T) -> String { value is Bool ? "" : "; last: \(value)" }

    static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let value = Double(seconds) + Double(attoseconds) * 1e-18
        return value.rounded() == value ? "\(Int(value)) s" : "\(value) s"
    }
}

/// What `eventually` throws when the time is up.
public struct WaitTimedOut: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
