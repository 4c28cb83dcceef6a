import EarshotStore
import EarshotSync
import EarshotSystem
import Foundation
import Logging

/// The library database as the daemon holds it: opened and checked at start, one connection
/// that writes (on its own serial queue, so writes never contend) and one that reads (WAL lets
/// it read while a write commits). When the file is damaged it is moved aside, never deleted,
/// and every call answers the problem until an operator recovers it.
final class LibraryStore: Sendable {
    private let writer: LibraryDatabase?
    private let reader: LibraryDatabase?
    /// Why the library cannot serve, nil while it can: the message every call answers and
    /// Health shows.
    let problem: LibraryError?
    let path: String
    private let writeQueue = DispatchQueue(label: "earshot.library.write")
    private let readQueue = DispatchQueue(label: "earshot.library.read")

    init(path: String, limits: LibraryLimits, maximumDatabaseBytes: Int?, logger: Logger) {
        self.path = path
        var writer: LibraryDatabase?
        var reader: LibraryDatabase?
        var problem: LibraryError?
        do throws(LibraryError) {
            let w = try LibraryDatabase(path: path, limits: limits, maximumDatabaseBytes: maximumDatabaseBytes, callerCheckpoints: true)
            reader = try LibraryDatabase(path: path, limits: limits, readOnly: true, verify: false)
            writer = w
        } catch where error.kind == .dataLoss {
            problem = Self.setAside(path, error, logger: logger)
        } catch {
            problem = LibraryError(error.kind == .resourceExhausted ? .unavailable : error.kind,
                                   "the library is unavailable: \(error.message). Recognition goes on; library calls fail until this is fixed and earshotd restarts.")
            logger.error("\(problem!.message)")
        }
        self.writer = writer
        self.reader = reader
        self.problem = problem
        if problem == nil, let w = writer, let owners = try? w.owners() {
            logger.info("library \(path): \(owners.count) owner(s), \(owners.reduce(0) { $0 + $1.itemCount }) item(s)")
        }
    }

    /// Moves a damaged database aside and says, for the log, Health and every call, what happened
    /// and how to recover.
    private static func setAside(_ path: String, _ error: LibraryError, logger: Logger) -> LibraryError {
        let stamp = LibraryService.fileStamp()
        let kept: String
        do throws(SystemError) {
            kept = "it was moved to \(try LibraryDatabase.setAside(path, stamp: stamp)) (never deleted)"
        } catch {
            kept = "it could not be moved aside (\(error.message)) and stays at \(path)"
        }
        let problem = LibraryError(.dataLoss, """
            the library database is damaged: \(error.message); \(kept). Recognition goes on; library calls fail \
            until earshotd restarts. To recover: stop earshotd, copy the newest backup (earshot remote library backup \
            writes them to <state>/library-backups) to \(path), and start it again; starting without a file at \(path) \
            begins an empty library. `sqlite3 <damaged file> .recover` may save items from the damaged copy.
            """)
        logger.critical("\(problem.message)")
        return problem
    }

    /// How notices name `owner` (the salt is fixed once the database is open: no queue needed).
    func ownerHash(_ owner: String) -> String {
        writer?.ownerHash(owner) ?? ""
    }

    /// Runs `body` (one write of `LibraryDatabase`) with the writing connection, and returns
    /// once it is committed and synced. Writes that arrive while one commits wait and then
    /// commit together in one transaction (group commit): one sync for all, each still all or
    /// nothing in its savepoint. With many clients at once, latency is then one sync, not one
    /// per client queued ahead.
    func write<T: Sendable>(_ body: @escaping @Sendable (LibraryDatabase) throws(LibraryError) -> T) async throws(LibraryError) -> T {
        guard let writer else { throw problem ?? LibraryError(.unavailable, "the library is not open") }
        let result: Result<T, LibraryError> = await withCheckedContinuation { continuation in
            let job = WriteJob(
                run: { db in
                    let outcome: Result<T, LibraryError>
                    do throws(LibraryError) { outcome = .success(try body(db)) } catch { outcome = .failure(error) }
                    // Resumed once the transaction's fate is known: a failed commit fails every write in it.
                    return { commitFailure in continuation.resume(returning: commitFailure.map { .failure($0) } ?? outcome) }
                },
                fail: { continuation.resume(returning: .failure($0)) })
            let first = pending.withLock { $0.append(job); return $0.count == 1 }
            if first { writeQueue.async { self.commitPending(writer) } }
        }
        return try result.get()
    }

    /// A write waiting for the next group commit.
    private struct WriteJob: Sendable {
        /// Applies the write; returns what finishes it once the commit succeeded (nil) or failed.
        let run: @Sendable (LibraryDatabase) -> @Sendable (LibraryError?) -> Void
        /// Fails it without running it (the transaction could not begin).
        let fail: @Sendable (LibraryError) -> Void
    }

    private let pending = Locked<[WriteJob]>([])
    /// Commits since the last checkpoint.
    private let commitsSinceCheckpoint = Locked(0)
    /// A passive checkpoint after this many commits keeps the WAL short.
    private static let checkpointEvery = 100

    /// On the write queue: every waiting write in one transaction, then their replies, then
    /// (sometimes) a checkpoint, which no reply waits for.
    private func commitPending(_ db: LibraryDatabase) {
        let jobs = pending.withLock { p in
            defer { p.removeAll() }
            return p
        }
        var finishers: [@Sendable (LibraryError?) -> Void] = []
        do throws(LibraryError) {
            try db.transaction { () throws(LibraryError) in
                for job in jobs { finishers.append(job.run(db)) }
            }
            for finish in finishers { finish(nil) }
        } catch {
            for finish in finishers { finish(error) }
            for job in jobs.dropFirst(finishers.count) { job.fail(error) }
        }
        let due = commitsSinceCheckpoint.withLock { n in
            n += 1
            if n < Self.checkpointEvery { return false }
            n = 0
            return true
        }
        if due { try? db.checkpoint() }
    }

    /// Runs `body` with the reading connection, on the read queue.
    func read<T: Sendable>(_ body: @escaping @Sendable (LibraryDatabase) throws(LibraryError) -> T) async throws(LibraryError) -> T {
        guard let database = reader else { throw problem ?? LibraryError(.unavailable, "the library is not open") }
        let result: Result<T, LibraryError> = await withCheckedContinuation { continuation in
            readQueue.async {
                do throws(LibraryError) { continuation.resume(returning: .success(try body(database))) } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }
}
