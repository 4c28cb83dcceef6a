import EarshotCore
import EarshotSystem

/// A catalog file mapped for `MappedCatalog` to read in place.
final class MappedCatalogImage: CatalogImage, @unchecked Sendable {
    private let file: MappedFile
    var bytes: UnsafeRawBufferPointer { file.bytes }

    init(_ file: MappedFile) {
        self.file = file
    }

    func willRead(_ range: Range<Int>) { file.willRead(range) }
    func doneReading(_ range: Range<Int>) { file.doneReading(range) }
}

extension MappedCatalog {
    /// Maps the `.earcat` file at `path` and validates it (`.full` by default: what the daemon
    /// and the CLI do for every catalog they open). Errors name the path. See
    /// `init(image:verification:shouldStop:)` for `shouldStop`.
    public convenience init(contentsOf path: String, verification: Verification = .full,
                            shouldStop: () -> Bool = { false }) throws(EarshotError) {
        let file: MappedFile
        do { file = try MappedFile(path: path) } catch { throw .catalogInvalid(error.message) }
        do {
            try self.init(image: MappedCatalogImage(file), verification: verification, shouldStop: shouldStop)
        } catch let e where e.message.hasPrefix(path) {
            throw e
        } catch {
            throw error.prefixed(path)
        }
    }
}
