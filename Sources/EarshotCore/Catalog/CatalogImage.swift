/// The bytes of an `.earcat` file that a `MappedCatalog` reads in place, kept alive as long as
/// the catalog: a file mapping (EarshotStore) or a heap copy (`HeapCatalogImage`). The core
/// never opens files; whoever does hands it one of these.
public protocol CatalogImage: AnyObject, Sendable {
    /// The image, 16-byte aligned.
    var bytes: UnsafeRawBufferPointer { get }
    /// `range` is about to be read front to back (a mapping reads it ahead).
    func willRead(_ range: Range<Int>)
    /// `range` is done with (a mapping gives its pages back to the page cache).
    func doneReading(_ range: Range<Int>)
}

extension CatalogImage {
    public func willRead(_ range: Range<Int>) {}
    public func doneReading(_ range: Range<Int>) {}
}

/// A private, aligned copy of an image: catalogs built in memory or received over the network.
public final class HeapCatalogImage: CatalogImage, @unchecked Sendable {
    public let bytes: UnsafeRawBufferPointer

    public init(copying data: [UInt8]) {
        let p = UnsafeMutableRawPointer.allocate(byteCount: max(data.count, 1), alignment: 16)
        data.withUnsafeBytes { src in
            if let base = src.baseAddress { p.copyMemory(from: base, byteCount: src.count) }
        }
        bytes = UnsafeRawBufferPointer(start: p, count: data.count)
    }

    deinit { UnsafeMutableRawPointer(mutating: bytes.baseAddress!).deallocate() }
}
