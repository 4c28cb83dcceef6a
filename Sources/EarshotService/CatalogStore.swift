import EarshotCore
import Foundation

/// The catalogs in the daemon's state folder (`<state>/catalogs/*.earcat`), memory-mapped.
///
/// A file that does not open (truncated, corrupt, foreign) is left out and reported, never fatal:
/// the daemon serves the catalogs that are good.
public final class CatalogStore: Sendable {
    public struct Entry: Sendable {
        /// File name without ".earcat".
        public let name: String
        public let path: String
        public let catalog: MappedCatalog
    }

    public let directory: String
    public let entries: [Entry]
    /// Files that could not be opened, with the reason.
    public let failures: [(name: String, reason: String)]

    /// Opens every `.earcat` in `directory` (created if missing), sorted by name.
    public init(directory: String) throws(EarshotError) {
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
        var failures: [(String, String)] = []
        for file in names {
            let path = (directory as NSString).appendingPathComponent(file)
            let name = String(file.dropLast(".earcat".count))
            do {
                entries.append(Entry(name: name, path: path, catalog: try MappedCatalog(contentsOf: path)))
            } catch {
                failures.append((name, error.message))
            }
        }
        self.entries = entries
        self.failures = failures
    }

    public func entry(named name: String) -> Entry? { entries.first { $0.name == name } }

    /// The catalog the session uses: `preferred` if given, else the first by name.
    public func active(preferred: String) throws(EarshotError) -> Entry {
        if !preferred.isEmpty {
            guard let e = entry(named: preferred) else {
                let why = failures.first { $0.name == preferred }.map { ": \($0.reason)" } ?? " (no \(preferred).earcat there)"
                throw .catalogInvalid("catalog \"\(preferred)\" in \(directory) cannot be used\(why)")
            }
            return e
        }
        guard let first = entries.first else {
            throw .catalogInvalid("no usable catalog in \(directory): put one there with `earshot catalog create -o \(directory)/NAME.earcat …`")
        }
        return first
    }
}
