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
    private let release: () -> Void

    private init(bytes: UnsafeRawBufferPointer, release: @escaping () -> Void) {
        self.bytes = bytes
        self.release = release
    }

    deinit { release() }

    /// A private copy of `data`, aligned for in-place reading.
    public static func copy(of data: [UInt8]) -> CatalogBytes {
        let p = UnsafeMutableRawPointer.allocate(byteCount: max(data.count, 1), alignment: 16)
        data.withUnsafeBytes { src in
            if let base = src.baseAddress { p.copyMemory(from: base, byteCount: src.count) }
        }
        return CatalogBytes(bytes: UnsafeRawBufferPointer(start: p, count: data.count)) { p.deallocate() }
    }

    /// Maps the file at `path` read-only. Pages are read lazily by the kernel, so opening costs
    /// the same for any size and only the pages a lookup touches become resident.
    /// The corresponding C functions are `open`, `fstat` and `mmap`.
    public static func map(path: String) throws(EarshotError) -> CatalogBytes {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .catalogInvalid("\(path): \(describeErrno(errno))") }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw .catalogInvalid("\(path): \(describeErrno(errno))") }
        guard (st.st_mode & S_IFMT) == S_IFREG else { throw .catalogInvalid("\(path): not a regular file") }
        let size = Int(st.st_size)
        guard size > 0 else { throw .catalogInvalid("\(path): file is empty") }
        guard let p = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0), p != MAP_FAILED else {
            throw .catalogInvalid("\(path): cannot map: \(describeErrno(errno))")
        }
        // Lookups jump around the index: do not read ahead pages nobody asked for.
        _ = madvise(p, size, MADV_RANDOM)
        return CatalogBytes(bytes: UnsafeRawBufferPointer(start: p, count: size)) { munmap(p, size) }
    }
}

/// The text of an errno value, e.g. "No such file or directory".
func describeErrno(_ code: Int32) -> String {
    String(cString: strerror(code))
}
