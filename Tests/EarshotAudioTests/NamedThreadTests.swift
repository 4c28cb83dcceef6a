import EarshotSync
import Foundation
import Testing

struct NamedThreadTests {
    /// The name shows where `top -H` and `ps -L` read it, and `join` returns once the body has.
    @Test func runsTheBodyUnderItsNameAndJoins() throws {
        let seen = Locked<String?>(nil)
        let thread = try NamedThread(name: "earshot-test-thread-long", stackSize: 1 << 18) {
            let name = try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
            usleep(50_000)
            seen.withLock { $0 = name }
        }
        #expect(!thread.isCurrent)
        thread.join()
        #expect(seen.withLock { $0 } == "earshot-test-th\n", "cut to the 15 bytes the kernel keeps")
        thread.join()  // a second join returns at once
    }

    /// Dropping the object detaches the thread: the body still runs to the end.
    @Test func aDroppedThreadRunsOn() throws {
        let done = DispatchSemaphore(value: 0)
        _ = try NamedThread(name: "earshot-detach") {
            usleep(20_000)
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 5) == .success)
    }
}
