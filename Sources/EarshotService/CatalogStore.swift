import EarshotCore
import EarshotStore
import EarshotSystem
import Foundation
import Logging

/// The catalogs in the daemon's state folder (`<state>/catalogs/*.earcat`), memory-mapped.
///
/// Every file gets the full verification the CLI uses (`MappedCatalog`'s default: every
/// checksum, the structure, the exact length), once, here. A file that fails it (truncated,
/// corrupt, foreign), or that is not a regular file (a FIFO would block the open; it is skipped
/// without being opened), is left out, logged and kept as a failure with its reason: the daemon
/// serves the catalogs that are good and lists the others as FAILED. Symbolic links to regular
/// files are followed.
public final class CatalogStore: Sendable {
    public struct Entry: Sendable {
        /// File name without ".earcat".
        public let name: String
        public let path: String
        public let catalog: MappedCatalog
    }

    /// A file that could not be used.
    public struct Failure: Sendable {
        /// File name without ".earcat".
        public let name: String
        public let path: String
        /// What is wrong, without the path (e.g. "checksum mismatch in section values (file corrupt)").
        public let reason: String
    }

    public let directory: String
    public let entries: [Entry]
    public let failures: [Failure]

    /// Opens every `.earcat` in `directory` (created if missing), sorted by name. When
    /// `shouldStop` turns true (a stop asked for during start-up) it gives up at once, between
    /// files or inside a long verification, with `DaemonSignals.stoppedDuringStartUp`.
    public init(directory: String, logger: Logger, shouldStop: () -> Bool = { false }) throws(EarshotError) {
        self.directory = directory
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw .internalError("cannot create the catalog folder \(directory): \(error.localizedDescription)")
        }
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".earcat") }.sorted()
        } catch {
            throw .internalError("cannot list the catalog folder \(directory): \(error.localizedDescription)")
        }
        var entries: [Entry] = []
        var failures: [Failure] = []
        for file in names {
            if shouldStop() { throw DaemonSignals.stoppedDuringStartUp }
            let path = (directory as NSString).appendingPathComponent(file)
            let name = String(file.dropLast(".earcat".count))
            // Looked at before anything opens it: a FIFO or a device is never opened.
            if let refusal = RegularFile.problem(at: path) {
                let kind = refusal.code == 0 ? "skipped (never opened)" : "left out"
                logger.error("catalog \(name) \(kind): \(path): \(refusal.message)")
                failures.append(Failure(name: name, path: path, reason: refusal.message))
                continue
            }
            logger.debug("checking catalog \(name) (\(path))")
            let started = ContinuousClock.now
            do {
                let catalog = try MappedCatalog(contentsOf: path, shouldStop: shouldStop)
                logger.debug("catalog \(name): \(catalog.byteCount) bytes verified in \(Self.milliseconds(since: started)) ms")
                entries.append(Entry(name: name, path: path, catalog: catalog))
            } catch {
                if shouldStop() { throw DaemonSignals.stoppedDuringStartUp }
                logger.error("catalog \(name) left out: \(error.message)")
                failures.append(Failure(name: name, path: path, reason: Self.withoutPath(error.message, path)))
            }
        }
        self.entries = entries
        self.failures = failures
    }

    public func entry(named name: String) -> Entry? { entries.first { $0.name == name } }

    public func failure(named name: String) -> Failure? { failures.first { $0.name == name } }

    /// The catalog the session uses: `preferred` if given, else the first by name.
    public func active(preferred: String) throws(EarshotError) -> Entry {
        if !preferred.isEmpty {
            guard let e = entry(named: preferred) else {
                let why = failure(named: preferred).map { ": \($0.reason)" } ?? " (no \(preferred).earcat there)"
                throw .catalogInvalid("catalog \"\(preferred)\" in \(directory) cannot be used\(why)")
            }
            return e
        }
        guard let first = entries.first else {
            let failed = failures.map { "\($0.name): \($0.reason)" }.joined(separator: "; ")
            throw .catalogInvalid("no usable catalog in \(directory)"
                + (failed.isEmpty ? "" : " (left out: \(failed))")
                + ": put one there with `earshot catalog create -o \(directory)/NAME.earcat …`")
        }
        return first
    }

    /// A core message names the file first; the name is already in the listing.
    private static func withoutPath(_ message: String, _ path: String) -> String {
        message.hasPrefix(path + ": ") ? String(message.dropFirst(path.count + 2)) : message
    }

    private static func milliseconds(since start: ContinuousClock.Instant) -> Int {
        let elapsed = ContinuousClock.now - start
        return Int(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)
    }
}
