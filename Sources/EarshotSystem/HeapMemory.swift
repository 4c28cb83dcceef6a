#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's heap: memory freed in large amounts (a flood's subscriptions, a cleared cue set)
/// stays with the allocator until it is given back to the system.
public enum HeapMemory {
    /// Returns whole free pages of every malloc arena to the system (glibc's `malloc_trim`; a few
    /// milliseconds). Nothing on C libraries without it.
    public static func giveBack() {
        _ = mallocTrim?(0)
    }

    /// glibc's `malloc_trim`, looked up once: Swift's Glibc module does not declare it.
    private static let mallocTrim: (@convention(c) (Int) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
    }()
}
