import EarshotSync
import FoundationEssentials

#if canImport(Glibc)
    import Glibc
#endif

/// A daemon's signals without races. `block` them first thing in `main`, before any thread
/// exists: every thread inherits the mask, so none runs a signal's default action and a signal
/// sent at any moment stays pending. `handle` then takes them one at a time with `sigwait` on a
/// thread of its own, pending ones included — a `systemctl stop` during start-up is neither
/// lost (as with SIG_IGN until a handler is installed) nor fatal (as before it).
public enum ProcessSignals {
    public static func block(_ signals: [Int32]) {
        var set = Self.set(signals)
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// Calls `handler` for each of `signals` (which must be blocked) as it arrives, forever.
    public static func handle(_ signals: [Int32], _ handler: @escaping @Sendable (Int32) -> Void) throws(NamedThread.StartError) {
        _ = try NamedThread(name: "earshot-signals", stackSize: 1 << 18) {
            var set = Self.set(signals)
            while true {
                var number: Int32 = 0
                if sigwait(&set, &number) == 0 { handler(number) }
            }
        }
    }

    private static func set(_ signals: [Int32]) -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for number in signals { sigaddset(&set, number) }
        return set
    }
}
