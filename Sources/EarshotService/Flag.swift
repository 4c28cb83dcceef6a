import Synchronization

/// A flag set once: of several callers, exactly one wins.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    /// Sets the flag; true for the one caller that set it first.
    func claim() -> Bool { value.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged }
}
