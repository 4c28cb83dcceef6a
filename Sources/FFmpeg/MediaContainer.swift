import CFFmpeg

/// A media file opened with libavformat (`AVFormatContext`): its format, its streams, and its
/// packets in file order.
///
/// Not thread-safe: use each container (and its decoders) from one thread at a time.
/// The corresponding C functions are `avformat_open_input`, `avformat_find_stream_info`,
/// `av_read_frame` and `avformat_close_input`.
public final class MediaContainer {
    /// FFmpeg's name of the format, as "matroska,webm" or "mov,mp4,m4a,3gp,3g2,mj2".
    public let formatName: String
    /// Its streams, in the container's order.
    public let streams: [MediaStream]
    /// The file's duration in seconds when the container states it or FFmpeg read it from the
    /// timestamps; nil when unknown or only guessed from the bit rate.
    public let duration: Double?
    /// True when `duration` is stated in the file's header (Matroska, MP4), false when it was
    /// read from the timestamps at the file's ends (MPEG-TS), which a cut file changes too.
    public let durationIsStated: Bool
    /// Where the file's timeline starts, in seconds (0 when the file does not say).
    public let startTime: Double
    let context: UnsafeMutablePointer<AVFormatContext>

    /// Opens the local file `path` and reads enough of it to describe every stream; `format`
    /// (a name `probeFormat` returned) skips FFmpeg's own guess. Only local files are opened:
    /// the path is never read as a URL, and no file may make FFmpeg open a network address.
    public init(path: String, format: String? = nil) throws(FFmpegError) {
        FFmpegLog.silence()
        var opened: UnsafeMutablePointer<AVFormatContext>?
        var options: OpaquePointer?
        av_dict_set(&options, "protocol_whitelist", "file", 0)
        defer { av_dict_free(&options) }
        let inputFormat = format.flatMap { name in name.split(separator: ",").first.flatMap { av_find_input_format(String($0)) } }
        // "file:" keeps a name with a colon in it ("news-20:00.ts") from being read as a protocol.
        let status = avformat_open_input(&opened, "file:" + path, inputFormat, &options)
        guard status >= 0, let context = opened else { throw FFmpegError(code: status, operation: "opening the file") }
        let found = avformat_find_stream_info(context, nil)
        guard found >= 0 else {
            avformat_close_input(&opened)
            throw FFmpegError(code: found, operation: "reading the streams")
        }
        self.context = context
        formatName = context.pointee.iformat.map { String(cString: $0.pointee.name) } ?? "unknown"
        let knownDuration = context.pointee.duration != Int64.min && context.pointee.duration > 0
            && context.pointee.duration_estimation_method != AVFMT_DURATION_FROM_BITRATE
        duration = knownDuration ? Double(context.pointee.duration) / Double(AV_TIME_BASE) : nil
        durationIsStated = knownDuration && context.pointee.duration_estimation_method == AVFMT_DURATION_FROM_STREAM
        startTime = context.pointee.start_time == Int64.min ? 0 : Double(context.pointee.start_time) / Double(AV_TIME_BASE)
        let stated = durationIsStated
        streams = (0..<Int(context.pointee.nb_streams)).map { MediaStream(context.pointee.streams[$0]!, lengthsAreStated: stated) }
    }

    deinit {
        var p: UnsafeMutablePointer<AVFormatContext>? = context
        avformat_close_input(&p)
    }

    /// Reads the next packet of any stream into `packet`; false at the end of the file. Throws
    /// when the file cannot be read further (an I/O error, or data the demuxer cannot parse).
    public func read(into packet: MediaPacket) throws(FFmpegError) -> Bool {
        packet.clear()
        let status = av_read_frame(context, packet.packet)
        if status == FFmpegError.endOfFile { return false }
        guard status >= 0 else { throw FFmpegError(code: status, operation: "reading the file") }
        return true
    }

    /// Tells the demuxer to drop every stream but `index`, so reading skips the others' payloads.
    public func discardAll(except index: Int) {
        for k in 0..<Int(context.pointee.nb_streams) where k != index {
            context.pointee.streams[k]!.pointee.discard = AVDISCARD_ALL
        }
    }

    /// The format FFmpeg recognises in the first bytes of a file (`av_probe_input_format`), by
    /// its content alone; nil when none is recognised with confidence.
    public static func probeFormat(of head: UnsafeRawBufferPointer) -> String? {
        FFmpegLog.silence()
        // The prober reads up to AVPROBE_PADDING_SIZE bytes past the end, which must be zero.
        var bytes = [UInt8](head)
        bytes.append(contentsOf: repeatElement(0, count: Int(AVPROBE_PADDING_SIZE)))
        return bytes.withUnsafeMutableBufferPointer { buffer -> String? in
            var data = AVProbeData()
            data.buf = buffer.baseAddress
            data.buf_size = Int32(head.count)
            data.filename = nil
            var score: Int32 = 0
            guard let format = av_probe_input_format3(&data, 1, &score), score > Int32(AVPROBE_SCORE_MAX) / 4 else { return nil }
            return String(cString: format.pointee.name)
        }
    }
}

/// FFmpeg prints warnings and errors to stderr by itself; Earshot reports them in its own words.
enum FFmpegLog {
    private static let silenced: Bool = {
        av_log_set_level(AV_LOG_QUIET)
        return true
    }()

    static func silence() { _ = silenced }
}
