/// The packets of one logical stream of an Ogg file (RFC 3533), read from bytes in memory.
///
/// Pure parsing, no I/O: the bytes are a mapped file. Every page's checksum is checked, so a cut
/// or damaged file is an error that says at which byte, not noise. The stream is the one the
/// file's first page begins; pages of other streams (a multiplexed file) are passed over, and
/// reading ends at the stream's last page. A chained file's later links are not read.
struct OggPacketReader {
    /// What is wrong with the bytes, and where.
    enum Problem: Error, Equatable {
        /// The file ends inside the page that starts at `offset`.
        case truncated(offset: Int)
        /// The bytes at `offset` are not a valid page.
        case corrupt(offset: Int, reason: String)

        var description: String {
            switch self {
            case .truncated(let offset): "the file ends inside the Ogg page at byte \(offset)"
            case .corrupt(let offset, let reason): "the Ogg page at byte \(offset) \(reason)"
            }
        }
    }

    /// One page's header fields and where its parts lie in the bytes.
    struct Page {
        var offset: Int
        var flags: UInt8
        var granulePosition: Int64
        var serial: UInt32
        var sequence: UInt32
        /// The lacing values (one per segment).
        var segmentTable: Range<Int>
        var body: Range<Int>

        var end: Int { body.upperBound }
        var continuesPacket: Bool { flags & 0x01 != 0 }
        var isFirst: Bool { flags & 0x02 != 0 }
        var isLast: Bool { flags & 0x04 != 0 }
    }

    let bytes: UnsafeRawBufferPointer
    /// The logical stream read: the serial number of the file's first page.
    let serial: UInt32
    /// The packet last returned by `next()`, valid until the next call.
    private(set) var packet: [UInt8] = []
    /// Whether that packet is the last one completed on its page, and that page's granule
    /// position (the stream's time at the end of the packet).
    private(set) var packetEndsPage = false
    var pageGranulePosition: Int64 { page.granulePosition }
    /// Where the page being read starts in the bytes.
    var position: Int { page.offset }

    private var page: Page
    private var nextSegment = 0
    private var nextSegmentOffset: Int
    /// True once the stream's last page has been read (or the bytes end cleanly after a page).
    private var finished = false

    /// Starts at the file's first page, which must be complete and valid and begin its stream.
    init(bytes: UnsafeRawBufferPointer) throws(Problem) {
        self.bytes = bytes
        page = try Self.page(in: bytes, at: 0)
        guard page.isFirst else { throw .corrupt(offset: 0, reason: "does not begin a stream") }
        serial = page.serial
        nextSegmentOffset = page.body.lowerBound
    }

    /// The next complete packet of the stream into `packet`; false at the end of the stream.
    /// A packet whose pages are not all there (a page missing by its sequence number, or a page
    /// that does not say it continues one) is dropped, and so is the tail of one whose start is
    /// missing: RFC 3533 lets a reader resume at the next whole packet.
    mutating func next() throws(Problem) -> Bool {
        packet.removeAll(keepingCapacity: true)
        while !finished {
            while nextSegment < page.segmentTable.count {
                let lacing = Int(bytes[page.segmentTable.lowerBound + nextSegment])
                let start = nextSegmentOffset
                packet.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start..<(start + lacing)]))
                nextSegment += 1
                nextSegmentOffset += lacing
                if lacing < 255 {
                    packetEndsPage = (nextSegment..<page.segmentTable.count).allSatisfy { bytes[page.segmentTable.lowerBound + $0] == 255 }
                    return true
                }
            }
            if page.isLast { finished = true; break }
            try advance()
        }
        return false
    }

    /// Moves to the stream's next page, passing over other streams' pages.
    private mutating func advance() throws(Problem) {
        var offset = page.end
        while true {
            guard offset < bytes.count else { finished = true; return }
            let candidate = try Self.page(in: bytes, at: offset)
            offset = candidate.end
            guard candidate.serial == serial else { continue }
            let inSequence = candidate.sequence == page.sequence &+ 1
            page = candidate
            nextSegment = 0
            nextSegmentOffset = candidate.body.lowerBound
            // An open packet goes on only on the very next page, and only if it says so.
            if !(inSequence && candidate.continuesPacket) { packet.removeAll(keepingCapacity: true) }
            // A page that continues a packet not open here starts with that packet's tail: skip it.
            if candidate.continuesPacket && packet.isEmpty { skipContinuation() }
            return
        }
    }

    /// Skips the segments of the current page up to and including the end of the packet the
    /// previous page began.
    private mutating func skipContinuation() {
        while nextSegment < page.segmentTable.count {
            let lacing = Int(bytes[page.segmentTable.lowerBound + nextSegment])
            nextSegment += 1
            nextSegmentOffset += lacing
            if lacing < 255 { return }
        }
    }

    /// How far back from the end `lastGranulePosition` looks: its stream's last page is near the
    /// end of any sane file (opusfile looks as far), and a crafted file of "OggS" bytes must not
    /// cost a checksum per byte of a whole file.
    static let lastPageSearchBytes = 256 * 1024

    /// The granule position of the stream's last complete page, searching back from the end of
    /// the bytes (at most `lastPageSearchBytes`); whether that page says it ends the stream;
    /// whether it ends the bytes (nothing cut off or appended after it).
    func lastGranulePosition() -> (position: Int64, endsStream: Bool, endsBytes: Bool)? {
        var offset = bytes.count - 27
        let stop = max(0, bytes.count - Self.lastPageSearchBytes)
        while offset > stop {
            if bytes[offset] == 0x4F, bytes[offset + 1] == 0x67, bytes[offset + 2] == 0x67, bytes[offset + 3] == 0x53,
               let found = try? Self.page(in: bytes, at: offset), found.serial == serial, found.granulePosition >= 0
            {
                return (found.granulePosition, found.isLast, found.end == bytes.count)
            }
            offset -= 1
        }
        return nil
    }

    /// The page that starts at `offset`, its checksum checked.
    static func page(in bytes: UnsafeRawBufferPointer, at offset: Int) throws(Problem) -> Page {
        guard offset + 27 <= bytes.count else { throw .truncated(offset: offset) }
        guard bytes[offset] == 0x4F, bytes[offset + 1] == 0x67, bytes[offset + 2] == 0x67, bytes[offset + 3] == 0x53 else {
            throw .corrupt(offset: offset, reason: "does not start with \"OggS\"")
        }
        guard bytes[offset + 4] == 0 else { throw .corrupt(offset: offset, reason: "has unknown version \(bytes[offset + 4])") }
        let segments = Int(bytes[offset + 26])
        let table = (offset + 27)..<(offset + 27 + segments)
        guard table.upperBound <= bytes.count else { throw .truncated(offset: offset) }
        var length = 0
        for i in table { length += Int(bytes[i]) }
        let body = table.upperBound..<(table.upperBound + length)
        guard body.upperBound <= bytes.count else { throw .truncated(offset: offset) }
        let stored = littleEndian(bytes, offset + 22, as: UInt32.self)
        guard OggChecksum.of(bytes, offset..<body.upperBound, zeroing: (offset + 22)..<(offset + 26)) == stored else {
            throw .corrupt(offset: offset, reason: "fails its checksum")
        }
        return Page(
            offset: offset, flags: bytes[offset + 5], granulePosition: Int64(bitPattern: littleEndian(bytes, offset + 6, as: UInt64.self)),
            serial: littleEndian(bytes, offset + 14, as: UInt32.self), sequence: littleEndian(bytes, offset + 18, as: UInt32.self),
            segmentTable: table, body: body)
    }

    static func littleEndian<T: FixedWidthInteger>(_ bytes: UnsafeRawBufferPointer, _ offset: Int, as: T.Type) -> T {
        T(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: T.self))
    }
}

/// Ogg's page checksum: CRC-32 with polynomial 0x04C11DB7, not reflected, starting at 0, with no
/// final inversion (unlike zlib's `CRC32`).
enum OggChecksum {
    private static let table: [UInt32] = (0..<256).map { i in
        var r = UInt32(i) << 24
        for _ in 0..<8 { r = r & 0x8000_0000 != 0 ? (r << 1) ^ 0x04C1_1DB7 : r << 1 }
        return r
    }

    /// The checksum of `bytes[range]` with the bytes in `zeroing` counted as zero.
    static func of(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>, zeroing: Range<Int>) -> UInt32 {
        table.withUnsafeBufferPointer { t in
            var crc: UInt32 = 0
            for i in range {
                let byte = zeroing.contains(i) ? 0 : bytes[i]
                crc = (crc << 8) ^ t[Int((crc >> 24) ^ UInt32(byte))]
            }
            return crc
        }
    }
}
