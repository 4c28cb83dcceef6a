/// Reads little-endian values from untrusted bytes; every read is bounds-checked and a short
/// read throws the error the caller's format chose, never traps.
struct ByteReader {
    let bytes: UnsafeRawBufferPointer
    private(set) var offset: Int
    let fail: (String) -> EarshotError

    init(_ bytes: UnsafeRawBufferPointer, offset: Int = 0, fail: @escaping (String) -> EarshotError) {
        self.bytes = bytes
        self.offset = offset
        self.fail = fail
    }

    var remaining: Int { bytes.count - offset }

    mutating func read<T: FixedWidthInteger>(_: T.Type, _ what: @autoclosure () -> String) throws(EarshotError) -> T {
        let size = MemoryLayout<T>.size
        guard offset >= 0, remaining >= size else {
            throw fail("truncated: needed \(size) bytes for \(what()) at offset \(offset), \(max(0, remaining)) left")
        }
        let v = T(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: T.self))
        offset += size
        return v
    }

    mutating func readDouble(_ what: @autoclosure () -> String) throws(EarshotError) -> Double {
        Double(bitPattern: try read(UInt64.self, what()))
    }

    mutating func readBytes(_ count: Int, _ what: @autoclosure () -> String) throws(EarshotError) -> UnsafeRawBufferPointer {
        guard count >= 0, offset >= 0, remaining >= count else {
            throw fail("truncated: needed \(count) bytes for \(what()) at offset \(offset), \(max(0, remaining)) left")
        }
        let slice = UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)])
        offset += count
        return slice
    }
}
