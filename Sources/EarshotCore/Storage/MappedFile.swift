#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Read-only bytes that a catalog reads in place: either a file mapped with `mmap` or a heap copy
/// (for catalogs received over the network or built in memory). Both are 16-byte aligned.
///
/// This is the core's one sanctioned contact with the operating system (DESIGN §3).
public final class CatalogBytes: @unchecked Sendable {
    public let bytes: UnsafeRawBufferPointer
    /// True for a file mapping, whose pages can be dropped and read again from the file.
    private let isMapped: Bool
    private let release: () -> Void

    private init(bytes: UnsafeRawBufferPointer, isMapped: Bool, release: @escaping () -> Void) {
        self.bytes = bytes
        self.isMapped = isMapped
        self.release = release
    }

    deinit { release() }

    /// A private copy of `data`, aligned for in-place reading.
    public static func copy(of data: [UInt8]) -> CatalogBytes {
        let p = UnsafeMutableRawPointer.allocate(byteCount: max(data.count, 1), alignment: 16)
        data.withUnsafeBytes { src in
            if let base = src.baseAddress { p.copyMemory(from: base, byteCount: src.count) }
        }
        return CatalogBytes(bytes: UnsafeRawBufferPointer(start: p, count: data.count), isMapped: false) { p.deallocate() }
    }

    /// Maps the file at `path` read-only. Pages are read lazily by the kernel, so opening costs
    /// the same for any size and only the pages a lookup touches become resident. Anything but
    /// a regular file is refused without blocking (see `RegularFile`).
    /// The corresponding C functions are `open`, `fstat` and `mmap`.
    public static func map(path: String) throws(EarshotError) -> CatalogBytes {
        let file: RegularFile.Opened
        do { file = try RegularFile.openForReading(path) } catch { throw .catalogInvalid("\(path): \(error.message)") }
        defer { close(file.descriptor) }
        let size = file.size
        guard size > 0 else { throw .catalogInvalid("\(path): file is empty") }
        guard let p = mmap(nil, size, PROT_READ, MAP_PRIVATE, file.descriptor, 0), p != MAP_FAILED else {
            throw .catalogInvalid("\(path): cannot map: \(describeErrno(errno))")
        }
        // Lookups jump around the index: do not read ahead pages nobody asked for.
        _ = madvise(p, size, MADV_RANDOM)
        return CatalogBytes(bytes: UnsafeRawBufferPointer(start: p, count: size), isMapped: true) { munmap(p, size) }
    }

    /// Bytes checksummed between two looks at `shouldStop`, and the most of a mapping a
    /// checksum keeps resident at once.
    static let checksumChunk = 1 << 20

    /// The CRC-32 of `bytes[range]`, or nil if `shouldStop` returned true first.
    ///
    /// A mapped file is read a chunk at a time: the next chunk is read ahead (the mapping is
    /// otherwise random-access, which would read a cold file a page per fault), and each chunk's
    /// pages are dropped from the process once checksummed, so checking a whole catalog leaves
    /// it as little resident as a lazy open does (the pages stay in the page cache and come
    /// back on the next touch). A heap copy is simply checksummed.
    /// The corresponding C function is `madvise` (`MADV_WILLNEED`, `MADV_DONTNEED`).
    public func checksum(_ range: Range<Int>, shouldStop: () -> Bool = { false }) -> UInt32? {
        precondition(range.lowerBound >= 0 && range.upperBound <= bytes.count, "range outside the catalog bytes")
        var crc: UInt32 = 0
        var start = range.lowerBound
        if isMapped { advise(start..<min(range.upperBound, start + Self.checksumChunk), MADV_WILLNEED) }
        while start < range.upperBound {
            if shouldStop() { return nil }
            let end = min(range.upperBound, start + Self.checksumChunk)
            if isMapped, end < range.upperBound { advise(end..<min(range.upperBound, end + Self.checksumChunk), MADV_WILLNEED) }
            crc = CRC32.checksum(UnsafeRawBufferPointer(rebasing: bytes[start..<end]), continuing: crc)
            if isMapped { advise(start..<end, MADV_DONTNEED) }
            start = end
        }
        return crc
    }

    /// `madvise` over the whole pages that overlap `range` of a mapping.
    private func advise(_ range: Range<Int>, _ advice: Int32) {
        guard let base = bytes.baseAddress, !range.isEmpty else { return }
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let first = range.lowerBound / page * page
        let last = (range.upperBound + page - 1) / page * page
        _ = madvise(UnsafeMutableRawPointer(mutating: base + first), last - first, advice)
    }
}

/// The text of an errno value, e.g. "No such file or directory".
func describeErrno(_ code: Int32) -> String {
    String(cString: strerror(code))
}
