@testable import EarshotAudio
import Testing

/// Ogg pages built by hand: `OggPacketReader` must split them into the packets they carry.
enum OggPages {
    /// One page carrying `packets` (the last one left open when `open` is true: it goes on
    /// in the next page), with a correct checksum.
    static func page(
        _ packets: [[UInt8]], serial: UInt32 = 7, sequence: UInt32 = 0, granule: Int64 = 0, flags: UInt8 = 0, open: Bool = false
    ) -> [UInt8] {
        var lacing: [UInt8] = []
        var body: [UInt8] = []
        for (i, packet) in packets.enumerated() {
            var left = packet.count
            while left >= 255 { lacing.append(255); left -= 255 }
            if !(open && i == packets.count - 1) { lacing.append(UInt8(left)) } else { precondition(left == 0) }
            body += packet
        }
        var page: [UInt8] = Array("OggS".utf8) + [0, flags]
        page += withUnsafeBytes(of: UInt64(bitPattern: granule).littleEndian, Array.init)
        page += withUnsafeBytes(of: serial.littleEndian, Array.init)
        page += withUnsafeBytes(of: sequence.littleEndian, Array.init)
        page += [0, 0, 0, 0, UInt8(lacing.count)] + lacing + body
        let crc = page.withUnsafeBytes { OggChecksum.of($0, 0..<page.count, zeroing: 22..<26) }
        page.replaceSubrange(22..<26, with: withUnsafeBytes(of: crc.littleEndian, Array.init))
        return page
    }

    /// Every packet the reader finds in `bytes`.
    static func packets(in bytes: [UInt8]) throws -> [[UInt8]] {
        try bytes.withUnsafeBytes { raw in
            var reader = try OggPacketReader(bytes: raw)
            var out: [[UInt8]] = []
            while try reader.next() { out.append(reader.packet) }
            return out
        }
    }
}

@Suite("OggPacketReader")
struct OggPacketReaderTests {
    @Test("the checksum is Ogg's CRC-32: polynomial 0x04C11DB7, not reflected, from 0, not inverted")
    func checksumMatchesTheSpecification() {
        // CRC-32/MPEG-2 style without final inversion ("CRC-32/OGG"): check value of "123456789".
        let digits = Array("123456789".utf8)
        let crc = digits.withUnsafeBytes { OggChecksum.of($0, 0..<9, zeroing: 0..<0) }
        #expect(crc == 0x89A1_897F)
    }

    @Test("splits pages into packets, across page boundaries and 255-byte lacing")
    func packetsAcrossPages() throws {
        let a = [UInt8](repeating: 1, count: 10)
        let b = (0..<600).map { UInt8($0 % 251) }  // lacing 255, 255, 90
        let c = [UInt8](repeating: 3, count: 255)  // exactly 255: needs a terminating 0
        let d = [UInt8](repeating: 4, count: 300)  // split over two pages
        let head = Array(d[0..<255]), tail = Array(d[255...])
        var file = OggPages.page([a], flags: 0x02)
        file += OggPages.page([b, c, head], sequence: 1, open: true)
        file += OggPages.page([tail], sequence: 2, flags: 0x01 | 0x04)
        #expect(try OggPages.packets(in: file) == [a, b, c, d])
    }

    @Test("passes over other streams' pages and stops at its stream's last page")
    func otherStreamsAndEnd() throws {
        var file = OggPages.page([[1]], serial: 7, flags: 0x02)
        file += OggPages.page([[9, 9]], serial: 8, flags: 0x02)
        file += OggPages.page([[2]], serial: 7, sequence: 1, granule: 960, flags: 0x04)
        file += OggPages.page([[3]], serial: 7, sequence: 2, granule: 1920)  // after the end: not read
        #expect(try OggPages.packets(in: file) == [[1], [2]])
    }

    @Test("drops the tail of a packet whose start is missing, and a packet cut by a missing page")
    func missingPieces() throws {
        // The second page says it continues a packet, but the first left none open.
        var file = OggPages.page([[1]], flags: 0x02)
        file += OggPages.page([[2, 2], [3]], sequence: 1, flags: 0x01 | 0x04)
        #expect(try OggPages.packets(in: file) == [[1], [3]])
        // A page is missing (sequence 1): the packet page 0 left open cannot go on on page 2.
        var gap = OggPages.page([[1], [UInt8](repeating: 5, count: 255)], flags: 0x02, open: true)
        gap += OggPages.page([[6, 6], [7]], sequence: 2, flags: 0x01 | 0x04)
        #expect(try OggPages.packets(in: gap) == [[1], [7]])
    }

    @Test("a file whose first page does not begin a stream is refused")
    func firstPageBeginsTheStream() {
        let file = OggPages.page([[1]], flags: 0x04)
        #expect(throws: OggPacketReader.Problem.corrupt(offset: 0, reason: "does not begin a stream")) { try OggPages.packets(in: file) }
    }

    @Test("drops a packet whose continuation page does not say it continues")
    func brokenContinuation() throws {
        var file = OggPages.page([[1], [UInt8](repeating: 5, count: 255)], flags: 0x02, open: true)
        file += OggPages.page([[6, 6]], sequence: 1, flags: 0x04)
        #expect(try OggPages.packets(in: file) == [[1], [6, 6]])
    }

    @Test("a damaged page fails its checksum, a cut one says so, garbage is no page; each names its byte")
    func damage() throws {
        let first = OggPages.page([[1]], flags: 0x02)
        let second = OggPages.page([[2, 2, 2]], sequence: 1, flags: 0x04)
        var damaged = first + second
        damaged[first.count + 28] ^= 0x40
        #expect(throws: OggPacketReader.Problem.corrupt(offset: first.count, reason: "fails its checksum")) {
            try OggPages.packets(in: damaged)
        }
        let cut = Array((first + second).dropLast(2))
        #expect(throws: OggPacketReader.Problem.truncated(offset: first.count)) { try OggPages.packets(in: cut) }
        let garbage = first + [0x4F, 0x67, 0x67, 0x54] + Array(second.dropFirst(4))
        #expect(throws: OggPacketReader.Problem.corrupt(offset: first.count, reason: "does not start with \"OggS\"")) {
            try OggPages.packets(in: garbage)
        }
        #expect(OggPacketReader.Problem.truncated(offset: 58).description == "the file ends inside the Ogg page at byte 58")
    }

    @Test("finds the stream's last granule position from the end, and whether anything follows it")
    func lastGranule() throws {
        var file = OggPages.page([[1]], flags: 0x02)
        file += OggPages.page([[2]], sequence: 1, granule: 960)
        file += OggPages.page([[3]], serial: 9, granule: 5000)
        file += OggPages.page([[4]], sequence: 2, granule: 1920, flags: 0x04)
        let whole = try file.withUnsafeBytes { try OggPacketReader(bytes: $0).lastGranulePosition() }
        #expect(whole?.position == 1920 && whole?.endsStream == true && whole?.endsBytes == true)
        let cut = Array(file.dropLast(1))
        let partial = try cut.withUnsafeBytes { try OggPacketReader(bytes: $0).lastGranulePosition() }
        #expect(partial?.position == 960 && partial?.endsStream == false && partial?.endsBytes == false)
    }
}
