import Foundation

/// A new, empty folder of its own for one test (or one fixture), under the system's temporary
/// folder unless told otherwise, removed with everything in it when the value goes. A fixture
/// kept for the whole run (a global, never released) is made with `removedAtExit`, and removed
/// when the test process exits.
public final class TemporaryDirectory: Sendable {
    public let url: URL
    /// The folder's path.
    public var path: String { url.path }

    /// - Parameters:
    ///   - label: the start of the folder's name (a unique suffix follows), to tell whose it is.
    ///   - parent: where it is made; the system's temporary folder by default.
    public init(_ label: String = "earshot-test", under parent: URL? = nil, removedAtExit: Bool = false) throws {
        url = (parent ?? FileManager.default.temporaryDirectory).appendingPathComponent("\(label)-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        if removedAtExit { Self.removeAtExit(url.path) }
    }

    deinit { Self.remove(url.path) }

    /// The path of `name` in the folder (the folder's own path for "").
    public func path(_ name: String) -> String { name.isEmpty ? path : url.appendingPathComponent(name).path }

    public func url(_ name: String) -> URL { url.appendingPathComponent(name) }

    /// Writes `bytes` to the file `name` (made or replaced) and returns its path.
    @discardableResult
    public func write(_ name: String, _ bytes: [UInt8]) throws -> String {
        try Data(bytes).write(to: url(name))
        return path(name)
    }

    /// Writes `text` (UTF-8) to the file `name` (made or replaced) and returns its path.
    @discardableResult
    public func write(_ name: String, text: String) throws -> String { try write(name, Array(text.utf8)) }

    public func bytes(_ name: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: url(name))) }

    public func exists(_ name: String) -> Bool { FileManager.default.fileExists(atPath: path(name)) }

    /// The names in the folder, sorted.
    public func names() throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: path).sorted() }

    /// Removes the folder even when a test made it (or something in it) read-only.
    private static func remove(_ path: String) {
        if (try? FileManager.default.removeItem(atPath: path)) != nil { return }
        var folders = [path]
        if let walker = FileManager.default.enumerator(atPath: path) {
            for case let relative as String in walker { folders.append(path + "/" + relative) }
        }
        for folder in folders { chmod(folder, 0o755) }
        try? FileManager.default.removeItem(atPath: path)
    }

    private static let atExit = AtExitList()

    private static func removeAtExit(_ path: String) { atExit.append(path) }

    /// Paths removed when the process exits; the handler is registered with the first.
    private final class AtExitList: @unchecked Sendable {
        private let lock = NSLock()
        private var paths: [String] = []
        private var registered = false

        func append(_ path: String) {
            lock.lock()
            defer { lock.unlock() }
            paths.append(path)
            if !registered {
                registered = true
                atexit { TemporaryDirectory.atExit.removeAll() }
            }
        }

        func removeAll() {
            lock.lock()
            let all = paths
            paths = []
            lock.unlock()
            for path in all { TemporaryDirectory.remove(path) }
        }
    }
}
