import Dispatch
import EarshotStore
import EarshotSync

/// The library's reading connections: a few read-only connections to the database (WAL lets
/// them read at once, and while a write commits), each used on its own serial queue, never on
/// an RPC or transport thread. Reads wait in a `FairQueue` by lane (the calling key), so one
/// key's many watches take one turn in the rotation, and another key's read waits at most for
/// the reads already running plus one read per other busy key. Each read is one snapshot of the
/// database. Callers keep each read short.
final class LibraryReadPool: Sendable {
    private typealias Job = @Sendable (LibraryDatabase) -> Void

    private struct State {
        var waiting = FairQueue<String, Job>()
        /// Connections with nothing to do, by index.
        var idle: [Int]
    }

    private let connections: [LibraryDatabase]
    private let queues: [DispatchQueue]
    private let state: Locked<State>

    /// Opens `count` read-only connections to `path` (already opened and checked by the writer).
    init(path: String, limits: LibraryLimits, count: Int) throws(LibraryError) {
        var connections: [LibraryDatabase] = []
        for _ in 0..<max(1, count) {
            connections.append(try LibraryDatabase(path: path, limits: limits, readOnly: true, verify: false))
        }
        self.connections = connections
        queues = connections.indices.map { DispatchQueue(label: "earshot.library.read.\($0)") }
        state = Locked(State(idle: Array(connections.indices)))
    }

    /// Runs `body` on a reading connection once it is `lane`'s turn, and awaits it.
    func read<T: Sendable>(lane: String, _ body: @escaping @Sendable (LibraryDatabase) throws(LibraryError) -> T) async throws(LibraryError) -> T {
        let result: Result<T, LibraryError> = await withCheckedContinuation { continuation in
            let job: Job = { db in
                do throws(LibraryError) { continuation.resume(returning: .success(try db.snapshot { () throws(LibraryError) in try body(db) })) } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
            let start: (Int, Job)? = state.withLock { s in
                if let index = s.idle.popLast() { return (index, job) }
                s.waiting.enqueue(job, lane: lane)
                return nil
            }
            if let (index, job) = start { run(job, on: index) }
        }
        return try result.get()
    }

    /// Runs `job` on connection `index`, then the next waiting job there, or leaves it idle.
    private func run(_ job: @escaping Job, on index: Int) {
        queues[index].async { [self] in
            job(connections[index])
            let next: Job? = state.withLock { s in
                if let next = s.waiting.dequeue() { return next }
                s.idle.append(index)
                return nil
            }
            if let next { run(next, on: index) }
        }
    }
}
