import COpus
import EarshotCore
import EarshotSystem

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Ogg Opus files (RFC 7845) of one or two channels, decoded with libopus's single-stream
/// decoder straight to the rate and channel count the caller wants.
///
/// libsndfile reads these files too, but through libopus's multistream decoder, which asks the
/// CPU for its features on every packet; on a virtual machine each of those `cpuid`s traps to the
/// host, and half of `catalog create`'s time went there. The single-stream decoder asks once.
/// Opus also decodes at 16 kHz and to mono by itself, so signatures skip the resampler. Files
/// with more channels (a surround mapping) are left to libsndfile.
///
/// The file is mapped (`MappedFile`) and read front to back, a few megabytes resident at a
/// time. Like any mapping, it must not shrink while it is read: a file truncated in place under
/// the reader ends the process (SIGBUS) where libsndfile's `read` would have returned an error.
/// Files replaced by rename, as editors and `cp` to a new name do, are safe.
///
/// The corresponding C functions are `opus_decoder_create`, `opus_decode_float`,
/// `opus_packet_get_nb_samples` and `opus_decoder_destroy`.
final class OggOpusDecoder {
    /// The rates libopus decodes at.
    static let rates = [8000, 12000, 16000, 24000, 48000]
    /// The most frames one packet decodes to: 120 ms at 48 kHz.
    private static let maximumPacketFrames48k = 5760

    let rate: Int
    let channels: Int
    /// Frames the file holds at `rate`, when its last page is there to say so.
    let frameCount: Int?

    private let file: MappedFile
    private var packets: OggPacketReader
    private let decoder: OpaquePointer
    private let gain: Float
    /// Decoded frames still to skip (the encoder's pre-skip) and still to deliver (up to the end
    /// the last page's granule position sets), at `rate`.
    private var skip: Int
    private var remaining: Int?
    /// Decoded, not yet delivered samples (interleaved), from `pendingStart`.
    private var pending: [Float]
    private var pendingStart = 0
    private var pendingCount = 0

    /// The decoder for the Ogg Opus file mapped in `file`, or nil when it is not an Ogg Opus file
    /// this decoder takes (another Ogg codec, a surround mapping, a broken first page: libsndfile
    /// then decides). `rate` and `channels` are what the caller prefers; a rate libopus does not
    /// decode at becomes 48 kHz, and a channel count other than 1 or 2 the file's own.
    init?(file: MappedFile, rate preferredRate: Int?, channels preferredChannels: Int?) {
        guard var packets = try? OggPacketReader(bytes: file.bytes), (try? packets.next()) == true,
              let head = OpusHead(packets.packet), head.mappingFamily == 0, (1...2).contains(head.channels),
              (try? packets.next()) == true, packets.packet.starts(with: Array("OpusTags".utf8))
        else { return nil }
        let rate = preferredRate.flatMap { Self.rates.contains($0) ? $0 : nil } ?? 48000
        let channels = preferredChannels.flatMap { (1...2).contains($0) ? $0 : nil } ?? head.channels
        var error: Int32 = 0
        let created = opus_decoder_create(Int32(rate), Int32(channels), &error)
        guard let decoder = created, error == OPUS_OK else {
            if let created { opus_decoder_destroy(created) }
            return nil
        }
        self.file = file
        self.decoder = decoder
        self.rate = rate
        self.channels = channels
        gain = head.gain
        skip = head.preSkip * rate / 48000
        // The audio ends where the stream's last page says (its granule position), counted from
        // where the stream starts (not always 0: a recording cut from a live stream). When the
        // last page found does not end the stream and bytes follow it (a cut-off page, say),
        // decoding runs on into them, so that a damaged end is reported.
        let samples48k = Self.length(packets, preSkip: head.preSkip)
        let frames = samples48k.map { $0.known * rate / 48000 }
        remaining = frames
        frameCount = samples48k?.exact == true ? frames : nil
        self.packets = packets
        pending = [Float](repeating: 0, count: Self.maximumPacketFrames48k * rate / 48000 * channels)
        file.willRead(0..<min(file.bytes.count, Self.readAhead))
    }

    /// Granule positions beyond this (about 265 days at 48 kHz) are not believed.
    private static let largestGranulePosition: Int64 = 1 << 40

    /// The stream's length at 48 kHz after the pre-skip, when its pages tell it; `exact` when its
    /// last page says it ends the stream (else the length is an end to trim at, not a count).
    private static func length(_ reader: OggPacketReader, preSkip: Int) -> (known: Int, exact: Bool)? {
        guard let last = reader.lastGranulePosition(), last.endsStream || last.endsBytes,
              (0...largestGranulePosition).contains(last.position), let start = startGranulePosition(reader)
        else { return nil }
        let samples = max(0, Int(last.position) - start - preSkip)
        return (samples, last.endsStream)
    }

    /// Where the stream starts (RFC 7845 §4.3): the granule position of the first page that
    /// completes an audio packet, less the samples of the packets up to there. Nil when that
    /// cannot be told.
    private static func startGranulePosition(_ reader: OggPacketReader) -> Int? {
        var reader = reader
        var samples = 0
        for _ in 0..<1024 {
            guard (try? reader.next()) == true else { return nil }
            if !reader.packet.isEmpty, reader.packet.count <= largestPacketBytes {
                let count = reader.packet.withUnsafeBufferPointer { opus_packet_get_nb_samples($0.baseAddress!, Int32($0.count), 48000) }
                if count > 0 { samples += Int(count) }
            }
            if reader.packetEndsPage {
                let granule = reader.pageGranulePosition
                guard (0...largestGranulePosition).contains(granule) else { return nil }
                // A first page holding more than its granule position allows would mean audio to
                // trim at the start; such a file is treated as starting at 0.
                return max(0, Int(granule) - samples)
            }
        }
        return nil
    }

    deinit {
        opus_decoder_destroy(decoder)
    }

    /// Decodes up to `maxFrames` frames into `output` (room for `maxFrames × channels`); returns
    /// the frames written, fewer only at the end of the stream. Throws `Problem` when a page is
    /// cut short or damaged or a packet does not decode; the frames of that call are lost.
    func read(into output: UnsafeMutableBufferPointer<Float>, maxFrames: Int) throws(Problem) -> Int {
        var written = 0
        while written < maxFrames {
            if pendingCount == 0 {
                guard try decodeNextPacket() else { break }
                continue
            }
            let frames = min(pendingCount, maxFrames - written)
            let from = pendingStart * channels, to = written * channels, count = frames * channels
            for i in 0..<count { output[to + i] = pending[from + i] }
            written += frames
            pendingStart += frames
            pendingCount -= frames
        }
        return written
    }

    enum Problem: Error {
        case ogg(OggPacketReader.Problem)
        case packet(index: Int, reason: String)

        var description: String {
            switch self {
            case .ogg(let problem): problem.description
            case .packet(let index, let reason): "Opus packet \(index) cannot be decoded (libopus: \(reason))"
            }
        }
    }

    private var packetIndex = 0

    /// RFC 7845 §3: an audio packet is at most this long (120 ms at 510 kbit/s, for each of up
    /// to 255 streams; one stream here, so generous).
    static let largestPacketBytes = 61_440
    /// How far ahead of the packet being decoded the file is read in, and how far behind it pages
    /// are given back.
    private static let readAhead = 4 << 20
    private var releasedUpTo = 0

    /// Decodes the next audio packet into `pending`, trimmed by the pre-skip and the stream's
    /// end; false at the end of the stream. Empty packets (which RFC 6716 forbids, and which
    /// libopus would turn into 120 ms of made-up audio each) are passed over.
    private func decodeNextPacket() throws(Problem) -> Bool {
        if let remaining, remaining <= 0 { return false }
        repeat {
            do {
                guard try packets.next() else { return false }
            } catch {
                throw .ogg(error)
            }
            packetIndex += 1
        } while packets.packet.isEmpty
        guard packets.packet.count <= Self.largestPacketBytes else {
            throw .packet(index: packetIndex, reason: "\(packets.packet.count) bytes, more than an Opus packet may hold")
        }
        // Stream the mapping: read ahead, give back what is behind.
        if packets.position - releasedUpTo >= Self.readAhead / 4 {
            file.doneReading(releasedUpTo..<packets.position)
            releasedUpTo = packets.position
            file.willRead(packets.position..<min(file.bytes.count, packets.position + Self.readAhead))
        }
        let capacity = pending.count / channels
        let decoded = packets.packet.withUnsafeBufferPointer { packet in
            pending.withUnsafeMutableBufferPointer { out in
                opus_decode_float(decoder, packet.baseAddress, Int32(packet.count), out.baseAddress!, Int32(capacity), 0)
            }
        }
        guard decoded >= 0 else {
            throw .packet(index: packetIndex, reason: String(cString: opus_strerror(decoded)))
        }
        var start = 0, count = Int(decoded)
        if skip > 0 {
            let skipped = min(skip, count)
            skip -= skipped
            start += skipped
            count -= skipped
        }
        if let left = remaining {
            count = min(count, left)
            remaining = left - count
        }
        if gain != 1 {
            for i in (start * channels)..<((start + count) * channels) { pending[i] *= gain }
        }
        pendingStart = start
        pendingCount = count
        return true
    }
}

/// The identification header of an Ogg Opus stream (RFC 7845 §5.1).
struct OpusHead {
    var channels: Int
    /// Samples (at 48 kHz) the decoder outputs before the audio starts.
    var preSkip: Int
    /// The output gain as a linear factor.
    var gain: Float
    var mappingFamily: Int

    init?(_ packet: [UInt8]) {
        guard packet.count >= 19, packet.starts(with: Array("OpusHead".utf8)), packet[8] & 0xF0 == 0 else { return nil }
        channels = Int(packet[9])
        preSkip = Int(packet[10]) | Int(packet[11]) << 8
        let q78 = Int16(bitPattern: UInt16(packet[16]) | UInt16(packet[17]) << 8)
        gain = Float(pow(10, Double(q78) / (20 * 256)))
        mappingFamily = Int(packet[18])
    }
}
