/// Calls `probe` every `interval` until `condition` holds for its result, `timeout` at most;
/// returns that result, or throws naming what it waited for and the last result.
func eventually<T>(
    _ what: String, timeout: Duration = .seconds(30), every interval: Duration = .milliseconds(20),
    _ probe: () async throws -> T, until condition: (T) -> Bool
) async throws -> T {
    let deadline = ContinuousClock.now + timeout
    while true {
        let value = try await probe()
        if condition(value) { return value }
        guard ContinuousClock.now < deadline else { throw HarnessError("timed out waiting until \(what); last: \(value)") }
        try await Task.sleep(for: interval)
    }
}
