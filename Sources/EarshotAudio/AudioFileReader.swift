import CSndfile
import EarshotCore
import EarshotSync
import EarshotSystem

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads an audio file in chunks of 32-bit float frames, for files too long to hold in memory.
///
/// Any format libsndfile reads is accepted (WAV, FLAC, Ogg Vorbis/Opus, MP3, AIFF, …). Integer
/// samples come out scaled to [-1, 1); float files come out as stored. The rate and channel
/// count are the file's own, and must lie within `AudioFormat`'s supported ranges; a caller may
/// prefer a rate and channel count, which a codec that can decode straight to them (Ogg Opus,
/// see `OggOpusDecoder`) then delivers.
///
/// A reader is not thread-safe: use each one from one task at a time.
/// The corresponding C functions are `sf_open`, `sf_readf_float` and `sf_close`.
public final class AudioFileReader {
    /// The path the reader was opened with; every error message starts with it.
    public let path: String
    /// The layout of the buffers `read(maxFrames:)` returns: float32 at the file's native rate
    /// and channel count, or at the preferred ones where the codec decodes straight to them.
    public let format: AudioFormat
    /// The number of frames in the file, when the file says so exactly. It is nil for MP3,
    /// where libsndfile's count is exact only if the file has a LAME/Xing header and otherwise
    /// an estimate from the bit rate, and for streams whose length libsndfile cannot tell (such
    /// as a truncated Ogg file).
    public let frameCount: Int?

    /// Who decodes: libsndfile, or libopus for Ogg Opus.
    private enum Backend {
        case sndfile(OpaquePointer)
        case opus(OggOpusDecoder)
    }

    private let backend: Backend
    /// True for MP3, whose decoder (libmpg123) prints to stderr; its calls run silenced.
    private let isMPEG: Bool
    /// libsndfile's own frame count, even when it is only an estimate; used to size buffers.
    let estimatedFrameCount: Int?
    /// Reused by every read so that streaming a long file does not allocate per chunk twice.
    private var scratch: [Float] = []
    private var framesDelivered = 0
    private var finished = false
    private var failure: EarshotError?

    /// Opens `path` for reading.
    ///
    /// Throws `invalidAudioFormat` with a message that starts with the path and says what is
    /// wrong: the file does not exist, is a directory, is empty or holds no audio, is not in a
    /// recognised format, is truncated or corrupt, or has an unsupported rate or channel count.
    /// The corresponding C function is `sf_open`.
    /// `preferred` asks for a rate and channel count (only those count) where the codec can
    /// decode straight to them: Ogg Opus of one or two channels decodes at 8, 12, 16, 24 or
    /// 48 kHz, to mono or stereo. Other files come at their own rate and channel count, as
    /// `format` then says.
    public init(path: String, preferring preferred: AudioFormat? = nil) throws(EarshotError) {
        do throws(SystemError) { try CString.check(path, as: "path") } catch { throw .invalidAudioFormat(error.message) }
        // libsndfile would block opening a FIFO (waiting for a writer): anything that is not a
        // regular file is refused before it sees the path.
        if let refusal = RegularFile.problem(at: path), refusal.code == 0 {
            throw .invalidAudioFormat("\(path): \(refusal.message)")
        }
        if let opus = Self.oggOpus(path: path, preferring: preferred) {
            if opus.frameCount == 0 { throw .invalidAudioFormat("\(path): the file holds no audio (0 frames)") }
            self.path = path
            backend = .opus(opus)
            isMPEG = false
            format = AudioFormat(sampleType: .float32, sampleRate: Double(opus.rate), channelCount: opus.channels)
            estimatedFrameCount = opus.frameCount
            frameCount = opus.frameCount
            return
        }
        var info = SF_INFO()
        // The format is not known yet; a file that is not MP3 may still be tried as MP3.
        // libsndfile keeps the error of a failed open in one process-wide variable: opens are
        // made one at a time, and a failure's code and text read before the next may start.
        let (opened, failure) = Self.opening.withLock { _ -> (OpaquePointer?, (code: Int32, text: String)?) in
            let handle = StandardErrorSilencer.silenced { sf_open(path, Int32(SFM_READ), &info) }
            return (handle, handle == nil ? (sf_error(nil), String(cString: sf_strerror(nil))) : nil)
        }
        guard let handle = opened, failure == nil else {
            let (code, text) = failure ?? (Int32(SF_ERR_SYSTEM), "unknown error")
            throw .invalidAudioFormat("\(path): \(Self.openFailureReason(path: path, code: code, libraryText: Self.humanized(text)))")
        }
        // From here on the handle is ours; deinit does not run if init throws, so close it here.
        let format = AudioFormat(
            sampleType: .float32, sampleRate: Double(info.samplerate), channelCount: Int(info.channels))
        do {
            try format.validate()
        } catch {
            sf_close(handle)
            throw error.prefixed(path)
        }
        if info.frames == 0 {
            sf_close(handle)
            throw .invalidAudioFormat("\(path): the file holds no audio (0 frames)")
        }
        // SF_COUNT_MAX means "unknown" (for example an Ogg file cut short).
        let reported: Int? = info.frames > 0 && info.frames < Int64.max ? Int(info.frames) : nil
        let isMPEG = info.format & Int32(SF_FORMAT_TYPEMASK) == Int32(SF_FORMAT_MPEG)

        self.path = path
        self.backend = .sndfile(handle)
        self.isMPEG = isMPEG
        self.format = format
        self.estimatedFrameCount = reported
        self.frameCount = isMPEG ? nil : reported
    }

    deinit {
        if case .sndfile(let handle) = backend { sf_close(handle) }
    }

    /// The Ogg Opus decoder for the file, or nil when it is not an Ogg Opus file that
    /// `OggOpusDecoder` takes (libsndfile then opens it, and explains what is wrong with it).
    private static func oggOpus(path: String, preferring preferred: AudioFormat?) -> OggOpusDecoder? {
        guard let file = try? MappedFile(path: path) else { return nil }
        let bytes = file.bytes
        // The first page starts with "OggS" and its first packet with "OpusHead".
        guard bytes.count >= 47, bytes.starts(with: Array("OggS".utf8)) else { return nil }
        let rate = preferred.flatMap { $0.sampleRate.isFinite && $0.sampleRate >= 1 && $0.sampleRate <= 1e6 ? Int($0.sampleRate) : nil }
        return OggOpusDecoder(file: file, rate: rate, channels: preferred?.channelCount)
    }

    /// Reads up to `maxFrames` frames (which must be positive); returns nil at the end of the file.
    ///
    /// The buffer may hold fewer frames than asked for, but never zero. Its samples share the
    /// reader's buffer until the next read, so a caller that drops each chunk before reading the
    /// next one streams without allocating. If the file turns out to
    /// be truncated or corrupt part way, the chunks read so far stay valid and this throws
    /// `invalidAudioFormat` (again on every later call).
    /// The corresponding C function is `sf_readf_float`.
    public func read(maxFrames: Int) throws(EarshotError) -> PCMBuffer? {
        guard try readIntoScratch(maxFrames: maxFrames) > 0 else { return nil }
        return try PCMBuffer(float32: scratch, sampleRate: format.sampleRate, channelCount: format.channelCount)
    }

    /// Reads up to `maxFrames` frames and appends their interleaved samples to `output`;
    /// returns the number of frames appended, 0 at the end of the file.
    func read(maxFrames: Int, appendingTo output: inout [Float]) throws(EarshotError) -> Int {
        let frames = try readIntoScratch(maxFrames: maxFrames)
        output.append(contentsOf: scratch)
        return frames
    }

    /// Fills `scratch` with the next frames (and only those) and returns how many were read.
    private func readIntoScratch(maxFrames: Int) throws(EarshotError) -> Int {
        precondition(maxFrames > 0, "maxFrames must be positive")
        if let failure { throw failure }
        if finished {
            scratch.removeAll(keepingCapacity: true)
            return 0
        }
        let channels = format.channelCount
        let (wanted, overflow) = maxFrames.multipliedReportingOverflow(by: channels)
        precondition(!overflow, "maxFrames is too large")

        // Resizing keeps the allocation once it is big enough; only the length changes.
        if scratch.count != wanted {
            if scratch.count > wanted {
                scratch.removeLast(scratch.count - wanted)
            } else {
                scratch.append(contentsOf: repeatElement(0, count: wanted - scratch.count))
            }
        }
        let got: Int
        var problem: String?
        switch backend {
        case .sndfile(let handle):
            got = isMPEG ? StandardErrorSilencer.silenced { decodeIntoScratch(handle, maxFrames) } : decodeIntoScratch(handle, maxFrames)
            // A short read is either the end of the file or a decoding error; only the latter
            // leaves an error code behind.
            if got < maxFrames, sf_error(handle) != Int32(SF_ERR_NO_ERROR) {
                problem = "libsndfile: \(Self.humanized(String(cString: sf_strerror(handle))))"
            }
        case .opus(let decoder):
            do {
                got = try scratch.withUnsafeMutableBufferPointer { p throws(OggOpusDecoder.Problem) in
                    try decoder.read(into: p, maxFrames: maxFrames)
                }
            } catch {
                got = 0
                problem = error.description
            }
            // libsndfile refuses such a file when it opens it; here it shows at the first read.
            if problem == nil, got == 0, framesDelivered == 0 {
                let error = EarshotError.invalidAudioFormat("\(path): the file holds no audio (0 frames could be decoded)")
                failure = error
                scratch.removeAll(keepingCapacity: true)
                throw error
            }
        }
        let frames = max(0, min(got, maxFrames))
        scratch.removeLast((maxFrames - frames) * channels)
        if frames < maxFrames { finished = true }
        if let problem {
            let error = EarshotError.invalidAudioFormat(
                "\(path): decoding failed after \(framesDelivered) frames; the file may be truncated or corrupt (\(problem))")
            failure = error
            // Frames decoded in the same call as the error are dropped with it: they may end in
            // garbage.
            scratch.removeAll(keepingCapacity: true)
            throw error
        }
        framesDelivered += frames
        return frames
    }

    /// libsndfile decodes up to `maxFrames` into `scratch` (sized for them); returns the frames read.
    private func decodeIntoScratch(_ handle: OpaquePointer, _ maxFrames: Int) -> Int {
        scratch.withUnsafeMutableBufferPointer { p in Int(sf_readf_float(handle, p.baseAddress, sf_count_t(maxFrames))) }
    }

    /// Held while `sf_open` runs and, when it fails, while its error is read (see `init`).
    private static let opening = Locked(())

    /// Explains why `sf_open` failed (libsndfile's `code` and text), in words for people.
    ///
    /// libsndfile's own messages are often misleading here ("Format not recognised." for a
    /// directory or an empty file), so the file system is asked first.
    private static func openFailureReason(path: String, code: Int32, libraryText: String) -> String {

        var status = stat()
        if stat(path, &status) != 0 {
            switch errno {
            case ENOENT: return "no such file (the file does not exist)"
            case ENOTDIR: return "no such file (a folder in the path is not a directory)"
            case EACCES: return "permission denied"
            default: return "cannot open the file (\(libraryText))"
            }
        }
        if status.st_mode & S_IFMT == S_IFDIR {
            return "is a directory, not an audio file"
        }
        if status.st_mode & S_IFMT == S_IFREG && status.st_size == 0 {
            return "the file is empty; it holds no audio"
        }
        switch code {
        case Int32(SF_ERR_UNRECOGNISED_FORMAT):
            return "not a recognised audio file (supported are WAV, FLAC, Ogg Vorbis/Opus, MP3, "
                + "AIFF and other formats libsndfile reads); it may be corrupt"
        case Int32(SF_ERR_SYSTEM):
            return "cannot open the file (\(libraryText))"
        case Int32(SF_ERR_MALFORMED_FILE):
            return "the file is malformed; it may be truncated or corrupt"
        default:
            // libsndfile's many private codes. Its text is worth keeping unless it contradicts
            // what stat just saw: a cut-off MP3 header gives "File does not exist …".
            let reason = "cannot be decoded; the file may be truncated or corrupt"
            return libraryText.contains("not exist") ? reason : "\(reason) (libsndfile: \(libraryText))"
        }
    }

    /// libsndfile's message without its "System error : " prefix, trailing full stop and capital.
    private static func humanized(_ text: String) -> String {
        var s = Substring(text)
        if let range = s.firstRange(of: "System error : ") { s = s[range.upperBound...] }
        if let range = s.firstRange(of: "Error : ") { s = s[range.upperBound...] }
        while s.last == "." || s.last == " " || s.last == "\n" { s = s.dropLast() }
        guard let first = s.first else { return "unknown error" }
        return first.lowercased() + s.dropFirst()
    }
}
