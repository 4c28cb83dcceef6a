import Dispatch
import EarshotStore
import EarshotSync
import EarshotSystem
import FoundationEssentials
import Logging

/// The library database as the daemon holds it: opened and checked at start, one connection
/// that writes (on its own serial queue, so writes never contend) and a small pool that reads
/// (`LibraryReadPool`: WAL lets them read while a write commits; reads are served fairly
/// across the keys that ask).
///
/// A damaged file is moved aside, never deleted, and a note is left at `<path>.damaged.txt`: while
/// the note is there and no database is at `path`, the library stays down (DATA_LOSS) across
/// restarts, so a reboot cannot quietly turn damage into an empty library. The operator either
/// copies a backup to `path` (the note is then retired at the next start) or deletes the note
/// to begin an empty library.
final class LibraryStore: Sendable {
    private let writer: LibraryDatabase?
    private let readers: LibraryReadPool?
    /// Why the library cannot serve, nil while it can: the message every call answers and
    /// Health shows.
    let problem: LibraryError?
    /// Why writes are refused while reads serve (a database that can only be read).
    let writeProblem: LibraryError?
    let path: String
    private let writeQueue = DispatchQueue(label: "earshot.library.write")

    /// The note left beside a database that was set aside.
    static func notePath(_ path: String) -> String { path + ".damaged.txt" }

    init(path: String, limits: LibraryLimits, maximumDatabaseBytes: Int?, readConnections: Int = 2, logger: Logger) {
        self.path = path
        var writer: LibraryDatabase?
        var readers: LibraryReadPool?
        var problem: LibraryError?
        var writeProblem: LibraryError?
        let note = Self.notePath(path)
        let noted = (try? AtomicFile.read(note)).map { Note(String(decoding: $0, as: UTF8.self)) }
        if let noted, let aside = noted.aside, FileIdentity(path: path) != nil, FileIdentity(path: aside) == nil,
           FileIdentity(path: aside + "-wal") != nil || FileIdentity(path: aside + "-shm") != nil {
            // Stopped in the middle of setting a damaged file aside (its WAL went first): finish
            // the move. With no sign of a move begun, the file at `path` is opened and checked
            // as any other — a damaged one is set aside again, a restored backup serves.
            for suffix in ["-wal", "-shm", ""] where FileIdentity(path: path + suffix) != nil && FileIdentity(path: aside + suffix) == nil {
                try? Directory.rename(path + suffix, to: aside + suffix)
            }
            logger.notice("library: finished moving the damaged database aside to \(aside)")
        }
        if let noted, FileIdentity(path: path) == nil {
            problem = LibraryError(.dataLoss, noted.text + " Until then library calls fail; recognition goes on.")
            logger.critical("\(problem!.message)")
        } else {
            if noted != nil {
                logger.notice("library: a database is back at \(path) (restored from a backup?); retiring \(note)")
                try? Directory.remove(note)
            }
            do throws(LibraryError) {
                let w = try LibraryDatabase(path: path, limits: limits, maximumDatabaseBytes: maximumDatabaseBytes, callerCheckpoints: true)
                readers = try LibraryReadPool(path: path, limits: limits, count: readConnections)
                writer = w
                if !w.isWritable {
                    writeProblem = LibraryError(.unavailable, """
                        the library database \(path) can only be read (file permissions or a read-only mount): items are \
                        listed, but nothing can be added or removed until it is writable and earshotd restarts
                        """)
                    logger.error("\(writeProblem!.message)")
                }
            } catch where error.kind == .dataLoss {
                problem = Self.setAside(path, error, logger: logger)
            } catch {
                problem = LibraryError(error.kind == .resourceExhausted ? .unavailable : error.kind,
                                       "\(error.message)\(Self.accessHint(path)). Recognition goes on; library calls fail until this is fixed and earshotd restarts.")
                logger.error("library: \(problem!.message)")
            }
        }
        self.writer = writer
        self.readers = readers
        self.problem = problem
        self.writeProblem = writeProblem
        if problem == nil, let w = writer, let owners = try? w.owners() {
            logger.info("library \(path): \(owners.count) owner(s), \(owners.reduce(0) { $0 + $1.itemCount }) item(s)")
        }
    }

    /// Why a database may not open, in the terms of the file system: SQLite only says "unable
    /// to open database file".
    private static func accessHint(_ path: String) -> String {
        let folder = Path.folder(of: path)
        let files = FileManager.default
        var isFolder = false
        if !files.fileExists(atPath: folder, isDirectory: &isFolder) { return " (the folder \(folder) does not exist)" }
        if !isFolder { return " (\(folder) is not a folder)" }
        if files.fileExists(atPath: path) {
            if !files.isReadableFile(atPath: path) { return " (earshotd's user may not read \(path))" }
        } else if !files.isWritableFile(atPath: folder) {
            return " (earshotd's user may not create files in \(folder))"
        }
        return ""
    }

    /// What Health says of the Library service (nil: serving).
    var healthProblem: String? { (problem ?? writeProblem)?.message }

    /// Moves a damaged database aside, leaves the note, and says, for the log, Health and every
    /// call, what happened and how to recover.
    private static func setAside(_ path: String, _ damage: LibraryError, logger: Logger) -> LibraryError {
        let stamp = LibraryService.fileStamp()
        let aside = LibraryDatabase.asidePath(path, stamp: stamp)
        let recovery = """
            \(damage.message). It was moved to \(aside) (never deleted). To recover: copy the newest backup \
            (<state>/library-backups/, written by `earshot remote library backup`) to \(path) and restart earshotd; \
            or delete \(notePath(path)) and restart to begin an empty library. `sqlite3 \(aside) .recover` may save \
            items from the damaged copy.
            """
        // The note first: a crash while the files move leaves the note, and the next start
        // finishes the move instead of opening what is left.
        do throws(SystemError) { try AtomicFile.write(Array(Note.text(aside: aside, recovery).utf8), to: notePath(path)) } catch {
            logger.error("library: cannot leave the note \(notePath(path)): \(error.message)")
        }
        do throws(SystemError) { _ = try LibraryDatabase.setAside(path, stamp: stamp) } catch {
            let problem = LibraryError(.dataLoss, """
                \(damage.message). It could not be moved aside (\(error.message)) and stays at \(path). Recognition goes \
                on; library calls fail until an operator replaces it with a backup and restarts earshotd.
                """)
            logger.critical("\(problem.message)")
            return problem
        }
        let problem = LibraryError(.dataLoss, recovery + " Recognition goes on.")
        logger.critical("\(problem.message)")
        return problem
    }

    /// The note beside a set-aside database: its first line says where the files went, the rest
    /// is for people.
    struct Note {
        var aside: String?
        var text: String

        init(_ contents: String) {
            var lines = contents.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            if let first = lines.first, first.hasPrefix("moved-to ") {
                aside = String(first.dropFirst("moved-to ".count))
                lines.removeFirst()
            }
            text = String(lines.joined(separator: "\n").trimmingWhitespace())
        }

        static func text(aside: String, _ recovery: String) -> String { "moved-to \(aside)\n\(recovery)\n" }
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
    /// `committed` runs on the write queue right after the commit, before the next one: what it
    /// publishes goes out in commit order.
    func write<T: Sendable>(_ body: @escaping @Sendable (LibraryDatabase) throws(LibraryError) -> T,
                            committed: (@Sendable (T) -> Void)? = nil) async throws(LibraryError) -> T {
        guard let writer else { throw notOpen }
        if let writeProblem { throw writeProblem }
        let result: Result<T, LibraryError> = await withCheckedContinuation { continuation in
            let job = WriteJob(
                run: { db in
                    let outcome: Result<T, LibraryError>
                    do throws(LibraryError) { outcome = .success(try body(db)) } catch { outcome = .failure(error) }
                    // Resumed once the transaction's fate is known: a failed commit fails every write in it.
                    return { commitFailure in
                        if commitFailure == nil, case .success(let value) = outcome { committed?(value) }
                        continuation.resume(returning: commitFailure.map { .failure($0) } ?? outcome)
                    }
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
    /// A passive checkpoint once the WAL holds this much keeps it short (SQLite's own automatic
    /// checkpoint waits for about as much: 1000 pages).
    private static let checkpointAtWALBytes: Int64 = 4 << 20

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
        if let wal = FileIdentity(path: path + "-wal"), wal.size >= Self.checkpointAtWALBytes { try? db.checkpoint() }
    }

    /// Writes a consistent copy of the database to `destination` (SQLite's online backup) on a
    /// connection and queue of its own, so reads and writes go on meanwhile; returns the owners
    /// as the copy holds them.
    func backup(to destination: String) async throws(LibraryError) -> [LibraryOwner] {
        guard writer != nil else { throw notOpen }
        let path = self.path
        return try await Self.run(on: .global()) { () throws(LibraryError) in
            try LibraryDatabase(path: path, readOnly: true, verify: false).backup(to: destination)
            return try LibraryDatabase(path: destination, readOnly: true, verify: false).owners()
        }
    }

    /// Runs `body` with a reading connection once it is `lane`'s turn (lane: the calling key;
    /// see `LibraryReadPool`).
    func read<T: Sendable>(lane: String, _ body: @escaping @Sendable (LibraryDatabase) throws(LibraryError) -> T) async throws(LibraryError) -> T {
        guard let readers else { throw notOpen }
        return try await readers.read(lane: lane, body)
    }

    /// What a call answers when the database is not open.
    private var notOpen: LibraryError { problem ?? LibraryError(.unavailable, "the library is not open") }

    /// Runs `body` on `queue` and awaits it.
    private static func run<T: Sendable>(on queue: DispatchQueue, _ body: @escaping @Sendable () throws(LibraryError) -> T) async throws(LibraryError) -> T {
        let result: Result<T, LibraryError> = await withCheckedContinuation { continuation in
            queue.async {
                do throws(LibraryError) { continuation.resume(returning: .success(try body())) } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }
}
