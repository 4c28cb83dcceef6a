#if canImport(Glibc)
    import Glibc
#endif

/// Seconds on the monotonic clock, which wall-clock changes (NTP steps, a Pi without a
/// real-time clock setting its time at boot) do not move. Reading it neither allocates nor locks.
enum MonotonicClock {
    static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) * 1e-9
    }
}
