import Synchronization

/// A flag one task sets and others read.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .acquiring) }
    func set() { value.store(true, ordering: .releasing) }
    /// Sets the flag; true for the one caller that set it first.
    func claim() -> Bool { value.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged }
}
