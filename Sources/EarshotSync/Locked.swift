import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A value behind a `Synchronization.Mutex` whose ordering ThreadSanitizer can see. Use it instead
/// of `Mutex` everywhere in Earshot (tests and tools too).
///
/// Why not `Mutex` itself: on Linux, `Mutex` takes and releases an uncontended lock with an atomic
/// compare-exchange inlined into our (instrumented) code, which TSan sees, but a contended lock is
/// handed over inside the kernel (`FUTEX_LOCK_PI`/`FUTEX_UNLOCK_PI`, or a spin in
/// libswiftSynchronization, neither instrumented). TSan then sees no happens-before between one
/// thread's critical section and the next and reports every access inside `withLock` as a race.
/// `withLock` here tells TSan what the mutex guarantees: `__tsan_acquire` on this object's address
/// first thing inside the lock, `__tsan_release` last thing before it is released. That is the
/// ordering the mutex really gives, no more: an access to the state (or to anything else) made
/// outside the lock on one side is still reported (scripts/sanitizers/tsan-check.sh checks
/// both). Outside a TSan process both hooks are nil, looked up once with `dlsym`, so each
/// `withLock` costs one extra pointer test per hook; the Swift runtime announces its own ordering
/// to TSan the same way.
///
/// A class rather than a noncopyable struct like `Mutex`: its address is stable (the annotations
/// need one) and it can be captured by escaping closures.
public final class Locked<Value: ~Copyable>: Sendable {
    @usableFromInline let mutex: Mutex<Value>

    public init(_ initialValue: consuming sending Value) {
        mutex = Mutex(initialValue)
    }

    /// Runs `body` with exclusive access to the value, like `Mutex.withLock`.
    @inlinable
    public func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        try mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
            let address = Unmanaged.passUnretained(self).toOpaque()
            ThreadSanitizerHooks.acquire?(address)
            defer { ThreadSanitizerHooks.release?(address) }
            #if compiler(>=6.3)
            return try body(&value)
            #else
            // Swift 6.2 rejects handing the `inout sending` value on to `body` ("sending 'value'
            // risks causing data races"; 6.3 accepts it). The same hand-over through a local that
            // its region checker does not follow: the value moves out and back on both exits.
            nonisolated(unsafe) var unchecked = consume value
            do throws(E) {
                let result = try body(&unchecked)
                value = consume unchecked
                return result
            } catch {
                value = consume unchecked
                throw error
            }
            #endif
        }
    }
}

/// `__tsan_acquire` and `__tsan_release` when the process runs with ThreadSanitizer, else nil.
@usableFromInline
enum ThreadSanitizerHooks {
    @usableFromInline typealias Hook = @convention(c) (UnsafeMutableRawPointer?) -> Void

    @usableFromInline static let acquire = lookUp("__tsan_acquire")
    @usableFromInline static let release = lookUp("__tsan_release")

    private static func lookUp(_ name: String) -> Hook? {
        #if canImport(Darwin)
            let everywhere = RTLD_DEFAULT
        #else
            let everywhere: UnsafeMutableRawPointer? = nil  // RTLD_DEFAULT, a macro Swift does not import
        #endif
        return dlsym(everywhere, name).map { unsafeBitCast($0, to: Hook.self) }
    }
}
