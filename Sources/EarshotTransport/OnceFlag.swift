import Synchronization

/// A flag that only the first caller of `claim` gets (closing and joining happen once).
final class OnceFlag: Sendable {
    private let taken = Atomic<Bool>(false)

    func claim() -> Bool {
        !taken.exchange(true, ordering: .acquiringAndReleasing)
    }
}
