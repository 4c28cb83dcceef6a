#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs `call` again while it fails with `EINTR` (a signal arrived before it did anything):
/// the one place Earshot retries an interrupted system call. `call` returns -1 on failure and
/// sets `errno`, as the C functions do.
@inline(__always)
public func retryingOnInterrupt<Result: BinaryInteger>(_ call: () -> Result) -> Result {
    while true {
        let result = call()
        if result != -1 || errno != EINTR { return result }
    }
}
