// The Swift runtime's TSan blind spot behind thread.supp's one entry, checked: built by
// scripts/sanitizers/tsan-check.sh with -sanitize=thread, no Earshot code.
//
// A thread writes a payload, then resumes the continuation a task waits on; the task reads the
// payload after its `await`. That is ordered: resuming is a release and the `await` an acquire
// (atomics in libswift_Concurrency). The runtime tells TSan about it only half way:
// resumeTaskAfterContinuation calls _swift_tsan_release, but swift_continuation_await, when it
// finds the continuation already resumed, carries on without _swift_tsan_acquire (the acquire is
// only announced when a suspended task is run again by its executor).
//   early  resumed before the task reaches `await` (fast path)  → TSan reports (false positive)
//   late   the task is suspended in `await` first               → no report
// AsyncStream goes the early way when a consumer registers in `next()` and the producer yields to
// it before the consumer's `await` runs.
import Foundation
import Synchronization

final class Payload: @unchecked Sendable { var value = 0 }
final class Mailbox: @unchecked Sendable {
    let lock = NSLock()
    var continuation: UnsafeContinuation<Payload, Never>?
    /// Set after resuming; relaxed, so it orders nothing (it only holds the task back).
    let resumed = Atomic<Bool>(false)
}

let mode = CommandLine.arguments.dropFirst().first ?? ""
guard ["early", "late"].contains(mode) else { fatalError("mode: early|late") }
let mailbox = Mailbox()
Thread {
    var continuation: UnsafeContinuation<Payload, Never>?
    while continuation == nil {
        mailbox.lock.lock()
        continuation = mailbox.continuation
        mailbox.lock.unlock()
        if continuation == nil { usleep(1000) }
    }
    if mode == "late" { usleep(200_000) }  // the task suspends first
    let payload = Payload()
    payload.value = 42  // before resuming
    continuation!.resume(returning: payload)
    mailbox.resumed.store(true, ordering: .relaxed)
}.start()
let done = DispatchSemaphore(value: 0)
Task.detached {
    let payload = await withUnsafeContinuation { (continuation: UnsafeContinuation<Payload, Never>) in
        mailbox.lock.lock()
        mailbox.continuation = continuation
        mailbox.lock.unlock()
        if mode == "early" {
            while !mailbox.resumed.load(ordering: .relaxed) {}
        }
    }
    print("\(mode): read \(payload.value) without a report")  // after the await
    done.signal()
}
done.wait()
