#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Whole-buffer reads and writes on a descriptor, retried on `EINTR`.
public enum Descriptor {
    /// Writes every byte of `bytes` to `fd`; returns 0, or the `errno` of the write that failed.
    public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32 {
        var done = 0
        while done < bytes.count {
            let n = retryingOnInterrupt { write(fd, bytes.baseAddress! + done, bytes.count - done) }
            if n < 0 { return errno }
            done += n
        }
        return 0
    }

    /// Reads into `buffer` until it is full or the file ends; returns the bytes read, or the
    /// negated `errno` of the read that failed.
    public static func readAll(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        var done = 0
        while done < buffer.count {
            let n = retryingOnInterrupt { read(fd, buffer.baseAddress! + done, buffer.count - done) }
            if n < 0 { return -Int(errno) }
            if n == 0 { break }
            done += n
        }
        return done
    }
}
