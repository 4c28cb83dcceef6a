// Only Glibc here: with Foundation imported too, `stdout` counts as shared mutable state.
#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// The process's stdout stream, as `print` writes it.
enum StandardOutput {
    /// Makes stdout line-buffered wherever it goes: each line `print` writes reaches a pipe or a
    /// file when it is printed, as a program following `--json` output needs, not when a block
    /// fills or the command ends.
    static func flushEachLine() {
        setvbuf(stdout, nil, _IOLBF, 0)
    }

    /// Writes `bytes` as is and at once, in order with `print`'s lines.
    static func write(_ bytes: UnsafeBufferPointer<UInt8>) {
        _ = fwrite(bytes.baseAddress, 1, bytes.count, stdout)
        fflush(stdout)
    }
}
