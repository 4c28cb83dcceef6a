import Synchronization

/// A flag that only the first caller of `claim` gets: closing, joining or stopping happens once,
/// whoever asks first.
public final class OnceFlag: Sendable {
    private let taken = Atomic<Bool>(false)

    public init() {}

    /// Sets the flag; true for the one caller that set it first.
    public func claim() -> Bool {
        !taken.exchange(true, ordering: .acquiringAndReleasing)
    }
}
