import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Clocks: monotonic wall time and the calling thread's CPU time.
enum Clock {
    /// Monotonic wall-clock seconds.
    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
    }

    /// CPU seconds used by the calling thread.
    static func threadCPU() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
    }
}
