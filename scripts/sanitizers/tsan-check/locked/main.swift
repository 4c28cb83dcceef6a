// What `Locked` (Sources/EarshotSync/Locked.swift) tells ThreadSanitizer, checked: built by
// scripts/sanitizers/tsan-check.sh with -sanitize=thread together with Locked.swift.
// Two threads, many iterations each, in one of four ways (the first argument):
//   mutex     both append under a plain Synchronization.Mutex    → TSan reports (false positive)
//   locked    both append under Locked                           → no report
//   half      one increments under Locked, the other without it  → TSan reports (a real race)
//   unlocked  both increment with no lock                        → TSan reports (a real race)
import Foundation
import Synchronization

final class Shared: @unchecked Sendable {
    let mutex = Mutex<[Int]>([])
    let locked = Locked<[Int]>([])
    var counter = 0
    /// Start line: both threads spin here so their loops overlap. Relaxed, so it orders nothing.
    let arrived = Atomic<Int>(0)
}

let mode = CommandLine.arguments.dropFirst().first ?? ""
guard ["mutex", "locked", "half", "unlocked"].contains(mode) else { fatalError("mode: mutex|locked|half|unlocked") }
let shared = Shared()
let group = DispatchGroup()
for index in 0..<2 {
    group.enter()
    Thread {
        shared.arrived.add(1, ordering: .relaxed)
        while shared.arrived.load(ordering: .relaxed) < 2 {}
        for i in 0..<100_000 {
            switch mode {
            case "mutex": shared.mutex.withLock { $0.append(i); if $0.count > 64 { $0.removeAll(keepingCapacity: true) } }
            case "locked": shared.locked.withLock { $0.append(i); if $0.count > 64 { $0.removeAll(keepingCapacity: true) } }
            case "half":
                if index == 0 { shared.locked.withLock { _ in shared.counter += 1 } } else { shared.counter += 1 }
            default: shared.counter += 1
            }
        }
        group.leave()
    }.start()
}
group.wait()
print("\(mode): finished without a report")
