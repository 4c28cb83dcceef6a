import CSodium

/// libsodium must be initialised before use; every wrapper calls `ensureInitialized` first.
enum Sodium {
    /// Swift runs a static's initialiser once, thread-safely.
    private static let initialized: Bool = sodium_init() >= 0

    static func ensureInitialized() {
        // Fails only when the system has no entropy source, which nothing here can fix.
        precondition(initialized, "libsodium could not be initialised")
    }
}
