#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A regular file mapped read-only with `mmap`, unmapped when the object goes.
///
/// Pages are read lazily by the kernel, so mapping costs the same for any size and only the
/// pages a reader touches become resident. The mapping is advised random-access (an index is
/// read in jumps); a reader going through a range front to back says so with `willRead`, and
/// gives pages back with `doneReading`.
public final class MappedFile: @unchecked Sendable {
    /// The file's bytes, page-aligned.
    public let bytes: UnsafeRawBufferPointer

    /// Maps the file at `path`. Anything but a non-empty regular file is refused without
    /// blocking (see `RegularFile`); the error's message starts with the path.
    /// The corresponding C functions are `open`, `fstat`, `mmap` and `madvise`.
    public init(path: String) throws(SystemError) {
        let file: RegularFile.Opened
        do { file = try RegularFile.openForReading(path) } catch { throw SystemError("\(path): \(error.message)", code: error.code) }
        defer { close(file.descriptor) }
        let size = file.size
        guard size > 0 else { throw SystemError("\(path): file is empty", code: 0) }
        guard let p = mmap(nil, size, PROT_READ, MAP_PRIVATE, file.descriptor, 0), p != MAP_FAILED else {
            throw .errno("\(path): cannot map", errno)
        }
        // Lookups jump around: do not read ahead pages nobody asked for.
        _ = madvise(p, size, MADV_RANDOM)
        bytes = UnsafeRawBufferPointer(start: p, count: size)
    }

    deinit {
        munmap(UnsafeMutableRawPointer(mutating: bytes.baseAddress!), bytes.count)
    }

    /// `range` is about to be read front to back: the kernel reads it ahead (`MADV_WILLNEED`).
    public func willRead(_ range: Range<Int>) {
        advise(range, MADV_WILLNEED)
    }

    /// `range` is done with: its pages leave the process (`MADV_DONTNEED`) but stay in the page
    /// cache and come back on the next touch.
    public func doneReading(_ range: Range<Int>) {
        advise(range, MADV_DONTNEED)
    }

    /// `madvise` over the whole pages that overlap `range`.
    private func advise(_ range: Range<Int>, _ advice: Int32) {
        guard let base = bytes.baseAddress, !range.isEmpty else { return }
        let clamped = range.clamped(to: 0..<bytes.count)
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let first = clamped.lowerBound / page * page
        let last = (clamped.upperBound + page - 1) / page * page
        _ = madvise(UnsafeMutableRawPointer(mutating: base + first), last - first, advice)
    }
}
