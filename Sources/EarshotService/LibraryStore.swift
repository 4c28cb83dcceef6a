import EarshotStore
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
            let w = try LibraryDatabase(path: path, limits: limits, maximumDatabaseBytes: maximumDatabaseBytes)
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

    /// Runs `body` with the writing connection, on the write queue.
    func write<T: Sendable>(_ body: @escaping @Sendable (LibraryDatabase) throws(LibraryError) -> T) async throws(LibraryError) -> T {
        try await run(on: writeQueue, writer, body)
    }

    /// Runs `body` with the reading connection, on the read queue.
    func read<T: Sendable>(_ body: @escaping @Sendable (LibraryDatabase) throws(LibraryError) -> T) async throws(LibraryError) -> T {
        try await run(on: readQueue, reader, body)
    }

    private func run<T: Sendable>(on queue: DispatchQueue, _ database: LibraryDatabase?,
                                  _ body: @escaping @Sendable (LibraryDatabase) throws(LibraryError) -> T) async throws(LibraryError) -> T {
        guard let database else { throw problem ?? LibraryError(.unavailable, "the library is not open") }
        let result: Result<T, LibraryError> = await withCheckedContinuation { continuation in
            queue.async {
                do throws(LibraryError) { continuation.resume(returning: .success(try body(database))) } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }
}
