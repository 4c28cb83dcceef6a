import EarshotSync

/// A value delivered once, by whichever of several racers comes first, and awaited once.
final class OneShot<T: Sendable>: Sendable {
    private enum State {
        case empty
        case waiting(CheckedContinuation<T, Never>)
        case delivered(T)
        case finished
    }
    private let state = Locked<State>(.empty)

    /// Delivers `value` unless something was delivered already.
    func deliver(_ value: T) {
        let waiter = state.withLock { s -> CheckedContinuation<T, Never>? in
            switch s {
            case .empty:
                s = .delivered(value)
                return nil
            case .waiting(let c):
                s = .finished
                return c
            case .delivered, .finished:
                return nil
            }
        }
        waiter?.resume(returning: value)
    }

    /// The first delivered value (waits for it).
    func value() async -> T {
        await withCheckedContinuation { c in
            let ready = state.withLock { s -> T? in
                if case .delivered(let v) = s {
                    s = .finished
                    return v
                }
                s = .waiting(c)
                return nil
            }
            if let ready { c.resume(returning: ready) }
        }
    }
}
