import EarshotCore
import FFmpeg

/// Reads one audio track of a video or broadcast file (MP4, MOV, Matroska/WebM, MPEG-TS, …)
/// through FFmpeg, in blocks of float32 frames, for files too long to hold in memory.
///
/// The track is the one `AudioTrackChoice` picks. Blocks come at the track's own rate and
/// channel count (those of its first frame, held for the whole track), on the track's timeline:
/// packets the decoder rejects are skipped and counted, and the gaps they (or a reception
/// dropout) leave are filled with silence, as a broadcast capture needs. A file that cannot be
/// read further, whose audio stops well before the length the file states, that decodes to
/// nothing, or most of whose packets are damaged is an error. Every error is
/// `invalidAudioFormat` with a message that starts with the path. Not thread-safe: use each
/// reader from one task at a time.
public final class MediaAudioReader {
    public let path: String
    /// The track being read.
    public let track: AudioTrack
    /// The track's length in seconds, from the file's header or its timestamps, when known.
    public let expectedDuration: Double?
    /// Packets of the track the decoder rejected (damaged data), skipped so far.
    public private(set) var damagedPackets = 0
    /// Seconds of silence put in gaps of the track's timeline so far.
    public var silenceFilled: Double { decoder.silenceFilled }

    private let container: MediaContainer
    private let decoder: AudioStreamDecoder
    private let packet = MediaPacket()
    private var packets = 0
    /// Where the last packet read of the track ends, in seconds of the file's timeline.
    private var audioEnd: Double?
    private var scratch: [Float] = []
    private var decodedFrames = 0
    private var formatChecked = false
    private var finished = false
    private var failure: EarshotError?

    /// Opens `path` and the audio track `choice` picks; `format` is the name `probeFormat` gave.
    public init(path: String, format: String? = nil, track choice: AudioTrackChoice = .containerDefault) throws(EarshotError) {
        self.path = path
        let container: MediaContainer
        do { container = try MediaContainer(path: path, format: format) } catch {
            throw .invalidAudioFormat("\(path): cannot be read; the file may be truncated or corrupt (FFmpeg: \(error.description))")
        }
        let audio = container.streams.filter { $0.kind == .audio }
        let position: Int
        switch choice.pick(from: audio) {
        case .success(let k): position = k
        case .failure(.noAudio):
            let others = container.streams.map { "\($0.kind) \($0.codecName)" }
            throw .invalidAudioFormat("\(path): the file holds no audio track"
                + (others.isEmpty ? "" : " (its streams: \(others.joined(separator: ", ")))"))
        case .failure(.noSuchNumber(let n)):
            throw .invalidAudioFormat("\(path): \(choice.option): the file has \(audio.count) audio track\(audio.count == 1 ? "" : "s"), so no track \(n) (\(AudioTrack.list(audio)))")
        case .failure(.noSuchLanguage(let language)):
            throw .invalidAudioFormat("\(path): \(choice.option): no audio track is tagged with the language \"\(language)\" (\(AudioTrack.list(audio)))")
        }
        let stream = audio[position]
        track = AudioTrack(number: position + 1, count: audio.count, stream: stream)
        guard stream.isDecodable else {
            throw .invalidAudioFormat("\(path): \(track.description) uses a codec that FFmpeg here cannot decode (\(stream.codecName))")
        }
        do { decoder = try AudioStreamDecoder(container: container, streamIndex: stream.index) } catch {
            throw .invalidAudioFormat("\(path): \(track.description) cannot be decoded (FFmpeg: \(error.description))")
        }
        container.discardAll(except: stream.index)
        self.container = container
        expectedDuration = stream.duration ?? container.duration
    }

    /// The share of the track decoded so far (0…1), when its length is known.
    public var fractionDone: Double? {
        guard let expectedDuration, expectedDuration > 0, let rate = decoder.outputRate else { return nil }
        return min(1, Double(decodedFrames) / Double(rate) / expectedDuration)
    }

    /// The next block of at least `minimumFrames` frames (fewer at the end of the track), or nil
    /// at its end. After an error, every later call throws the same error.
    public func read(minimumFrames: Int) throws(EarshotError) -> PCMBuffer? {
        precondition(minimumFrames > 0, "minimumFrames must be positive")
        if let failure { throw failure }
        scratch.removeAll(keepingCapacity: true)
        while !finished, (decoder.outputChannels).map({ scratch.count / $0 }) ?? 0 < minimumFrames {
            do throws(EarshotError) { try decodeNextPacket() } catch {
                failure = error
                throw error
            }
        }
        guard let rate = decoder.outputRate, let channels = decoder.outputChannels, !scratch.isEmpty else { return nil }
        decodedFrames += scratch.count / channels
        return try PCMBuffer(float32: scratch, sampleRate: Double(rate), channelCount: channels)
    }

    /// Reads packets until one of the track's is decoded (or the file ends, which drains the
    /// decoder and checks the track's length).
    private func decodeNextPacket() throws(EarshotError) {
        let more: Bool
        do { more = try container.read(into: packet) } catch {
            throw .invalidAudioFormat("\(path): reading failed after \(secondsText(decodedFrames)) of audio; "
                + "the file may be truncated or corrupt (FFmpeg: \(error.description))")
        }
        guard more else {
            finished = true
            try decode(nil)
            try checkEnd()
            return
        }
        guard packet.streamIndex == decoder.streamIndex else { return }
        if packet.isEncrypted {
            // What FFmpeg guessed of an encrypted track's layout came from ciphertext: name only its codec.
            throw .invalidAudioFormat("\(path): audio track \(track.number) of \(track.count) (\(track.stream.codecName)) is encrypted (DRM); "
                + "only unencrypted audio can be fingerprinted")
        }
        packets += 1
        if let end = packet.end { audioEnd = max(audioEnd ?? -.infinity, Double(end) * track.stream.timeBase) }
        try decode(packet)
    }

    /// Decodes a packet (nil: the end), counting a damaged one and skipping it. Refuses, before
    /// it piles up, audio in a format no signature takes and timestamps that would fill more
    /// silence than the track holds sound (a corrupt file could ask for years of it).
    private func decode(_ packet: MediaPacket?) throws(EarshotError) {
        do { _ = try decoder.decode(packet, appendingTo: &scratch) } catch {
            switch error {
            case .damagedPacket: damagedPackets += 1
            case .conversion(let problem):
                throw .invalidAudioFormat("\(path): \(track.description) cannot be converted to samples (FFmpeg: \(problem.description))")
            }
        }
        if !formatChecked, let rate = decoder.outputRate, let channels = decoder.outputChannels {
            do { try AudioFormat(sampleType: .float32, sampleRate: Double(rate), channelCount: channels).validate() } catch {
                throw error.prefixed("\(path): \(track.description)")
            }
            formatChecked = true
        }
        let heard = Double(decodedFrames + scratch.count / max(1, decoder.outputChannels ?? 1)) / Double(decoder.outputRate ?? 1)
        if decoder.silenceFilled > max(Self.silenceAllowance, heard - decoder.silenceFilled) {
            throw .invalidAudioFormat("\(path): \(track.description) skips ahead in time more than it holds audio "
                + "(\(Self.clock(decoder.silenceFilled)) of gaps); the file may be corrupt")
        }
    }

    /// Silence a track may need filled before it is held against the sound it holds.
    static let silenceAllowance = 60.0

    /// At the end of the file: refuses a track that decoded to nothing, most of whose packets
    /// were damaged, or that stops well short of the length the file states (a file cut short,
    /// or still being written).
    private func checkEnd() throws(EarshotError) {
        let channels = decoder.outputChannels ?? 1
        let total = decodedFrames + scratch.count / channels
        let scrambled = "the stream may be scrambled (pay TV) or badly damaged"
        guard total > 0 else {
            let damage = damagedPackets > 0 ? "; \(damagedPackets) of its \(packets) packets were damaged: \(scrambled)" : ""
            throw .invalidAudioFormat("\(path): \(track.description) holds no audio (0 frames could be decoded\(damage))")
        }
        if damagedPackets * 2 > packets {
            throw .invalidAudioFormat("\(path): \(track.description): \(damagedPackets) of its \(packets) packets could not be decoded; \(scrambled)")
        }
        // Where the audio ends on the file's timeline (its packets' timestamps, which skipped
        // packets do not shorten), else how much was decoded.
        let rate = Double(decoder.outputRate ?? 1)
        let ended = audioEnd.map { $0 - container.startTime } ?? Double(total) / rate
        if let stated = track.stream.duration, ended < stated - max(Self.shortfallTolerance, stated * Self.shortfallShare) {
            throw .invalidAudioFormat("\(path): the audio stops at \(Self.clock(ended)) of the \(Self.clock(stated)) the file states; "
                + "the file is truncated (cut short, or still being written)")
        }
    }

    /// How far short of its stated length a track may end: encoders pad and trim the ends by a
    /// few frames.
    static let shortfallTolerance = 1.0
    static let shortfallShare = 0.01

    private func secondsText(_ frames: Int) -> String {
        Self.clock(Double(frames) / Double(decoder.outputRate ?? 1))
    }

    /// "1:02:03.5", "2:03.5" or "3.5 s".
    static func clock(_ seconds: Double) -> String {
        let tenths = Int((max(0, seconds) * 10).rounded())
        let h = tenths / 36_000, m = tenths / 600 % 60, s = tenths / 10 % 60, t = tenths % 10
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        if h > 0 { return "\(h):\(two(m)):\(two(s)).\(t)" }
        if m > 0 { return "\(m):\(two(s)).\(t)" }
        return "\(s).\(t) s"
    }
}
