import CALSA
import EarshotSystem
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Lets one consumer sleep until a producer says there is something new, without the producer
/// ever allocating or taking a lock.
///
/// Why not poll at the period interval: a 20 ms poll adds up to 20 ms of latency to every answer
/// and wakes the consumer for nothing while the device is quiet. Why not a condition variable:
/// signalling one needs its mutex, which the capture thread must not take (it could wait behind
/// a descheduled consumer). A POSIX semaphore fits: `sem_post` is async-signal-safe by POSIX, so
/// it takes no lock and allocates nothing — in glibc it is an atomic increment plus a futex wake
/// when a waiter sleeps. To keep even that system call off the common path, the producer posts
/// only when the consumer has said it is about to sleep (`waiting`).
///
/// `notify` may be called from any number of threads; `wait` from one thread at a time.
final class WakeSignal: @unchecked Sendable {
    // sem_t must not move once initialised, so it lives in its own allocation.
    private let semaphore: UnsafeMutablePointer<sem_t>
    private let waiting = Atomic<Bool>(false)

    init() {
        semaphore = .allocate(capacity: 1)
        sem_init(semaphore, 0, 0)
    }

    deinit {
        sem_destroy(semaphore)
        semaphore.deallocate()
    }

    /// Wakes the consumer if it is waiting. Never blocks, allocates or locks.
    func notify() {
        // Pairs with the fence in `wait`: either the consumer sees the producer's new data when
        // it re-checks, or the producer sees `waiting` and posts.
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        if waiting.exchange(false, ordering: .acquiringAndReleasing) {
            sem_post(semaphore)
        }
    }

    /// Returns at once if `ready()` is true; otherwise sleeps until `notify` or until `timeout`
    /// seconds have passed. Returns `ready()` as it is on return. Spurious early returns are
    /// possible (a post left over from a wait that timed out), so callers loop.
    func wait(timeout: Double, until ready: () -> Bool) -> Bool {
        // Drop a post left over from an earlier wait that timed out just as it came.
        while sem_trywait(semaphore) == 0 {}
        waiting.store(true, ordering: .releasing)
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        if ready() {
            waiting.store(false, ordering: .releasing)
            return true
        }
        var deadline = timespec()
        clock_gettime(CLOCK_MONOTONIC, &deadline)
        let seconds = max(0, min(timeout, 86_400))
        let whole = seconds.rounded(.down)
        deadline.tv_sec += Int(whole)
        deadline.tv_nsec += Int((seconds - whole) * 1e9)
        if deadline.tv_nsec >= 1_000_000_000 {
            deadline.tv_sec += 1
            deadline.tv_nsec -= 1_000_000_000
        }
        // Monotonic deadline: a change of the wall clock must not stretch or cut the wait.
        _ = retryingOnInterrupt { sem_clockwait(semaphore, CLOCK_MONOTONIC, &deadline) }
        waiting.store(false, ordering: .releasing)
        return ready()
    }
}
