import CFFmpeg

/// Decodes one audio stream of a `MediaContainer` (libavcodec) into interleaved float32 samples
/// (libswresample), on the stream's own timeline.
///
/// The output keeps the channel count of the first decoded frame, and its rate (rates above
/// 96 kHz become 48 kHz), for the whole stream: a broadcast that changes mid-stream (a 5.1 film
/// between stereo adverts) is remixed and resampled to it, so the caller sees one format. Where
/// the frames' timestamps jump ahead (packets lost in reception, or skipped as damaged), the gap
/// up to `longestGapFilled` is filled with silence, so later audio keeps its place in time.
/// Not thread-safe; use it from the thread that reads its container. The corresponding C
/// functions are `avcodec_send_packet`, `avcodec_receive_frame` and `swr_convert`.
public final class AudioStreamDecoder {
    /// Why a packet gave no audio: its data was damaged (the decoder stays usable), or decoded
    /// audio could not be converted (the stream's layout is one swresample does not take).
    public enum Failure: Error {
        case damagedPacket(FFmpegError)
        case conversion(FFmpegError)
    }

    /// The stream decoded, by its container index.
    public let streamIndex: Int
    /// The output's rate and channel count; nil until the first frame is decoded.
    public private(set) var outputRate: Int?
    public private(set) var outputChannels: Int?
    /// Seconds of silence put in the gaps between frames so far.
    public private(set) var silenceFilled = 0.0
    /// The longest jump ahead of the timestamps that is filled; a longer one is a new timeline
    /// (a broadcast's timestamp discontinuity), joined without a gap.
    public static let longestGapFilled = 10.0
    /// Jumps shorter than this are rounding in the container's timestamps, not gaps.
    static let shortestGapFilled = 0.005
    /// Timestamps further behind the output than this start a new timeline.
    static let longestOverlap = 0.5

    private let codec: UnsafeMutablePointer<AVCodecContext>
    private let frame: UnsafeMutablePointer<AVFrame>
    private let timeBase: Double
    private var converter: OpaquePointer?
    private var outputLayout = AVChannelLayout()
    /// The input format the converter was made for: layout, sample format, rate.
    private var converterInput: (layout: AVChannelLayout, format: Int32, rate: Int32)?
    /// The stream time (seconds) at which the next output frame is due, once frames have come.
    private var nextTime: Double?

    /// A decoder for stream `index` of `container`. Throws when the stream is not audio, its
    /// codec has no decoder here, or the decoder does not open.
    public init(container: MediaContainer, streamIndex index: Int) throws(FFmpegError) {
        guard index >= 0, index < Int(container.context.pointee.nb_streams),
              let stream = container.context.pointee.streams[index],
              stream.pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_AUDIO else {
            throw FFmpegError(code: 0, operation: "stream \(index) is not an audio stream")
        }
        guard let decoder = avcodec_find_decoder(stream.pointee.codecpar.pointee.codec_id) else {
            throw FFmpegError(code: 0, operation: "no decoder for the stream's codec")
        }
        guard let codec = avcodec_alloc_context3(decoder), let frame = av_frame_alloc() else {
            fatalError("avcodec_alloc_context3: out of memory")
        }
        self.codec = codec
        self.frame = frame
        streamIndex = index
        let base = stream.pointee.time_base
        timeBase = base.den > 0 ? Double(base.num) / Double(base.den) : 0
        var status = avcodec_parameters_to_context(codec, stream.pointee.codecpar)
        if status >= 0 {
            codec.pointee.pkt_timebase = base
            // Files are decoded side by side, one per core; one thread per decoder suffices.
            codec.pointee.thread_count = 1
            status = avcodec_open2(codec, decoder, nil)
        }
        guard status >= 0 else {
            var c: UnsafeMutablePointer<AVCodecContext>? = codec
            avcodec_free_context(&c)
            var f: UnsafeMutablePointer<AVFrame>? = frame
            av_frame_free(&f)
            throw FFmpegError(code: status, operation: "opening the decoder")
        }
    }

    deinit {
        var c: UnsafeMutablePointer<AVCodecContext>? = codec
        avcodec_free_context(&c)
        var f: UnsafeMutablePointer<AVFrame>? = frame
        av_frame_free(&f)
        swr_free(&converter)
        av_channel_layout_uninit(&outputLayout)
        if var input = converterInput?.layout { av_channel_layout_uninit(&input) }
    }

    /// Decodes `packet` (nil: the end of the stream, which drains the decoder and the converter)
    /// and appends the samples of every frame it completes to `output`; returns the frames
    /// appended. After a `damagedPacket` failure the decoder takes the next packet as usual.
    public func decode(_ packet: MediaPacket?, appendingTo output: inout [Float]) throws(Failure) -> Int {
        var appended = 0
        var sent = avcodec_send_packet(codec, packet?.packet)
        // A decoder whose frames were not all taken (a failure part way) takes no more input.
        if sent == FFmpegError.tryAgain {
            appended += try drain(appendingTo: &output)
            sent = avcodec_send_packet(codec, packet?.packet)
        }
        if sent < 0, sent != FFmpegError.endOfFile {
            throw .damagedPacket(FFmpegError(code: sent, operation: "decoding"))
        }
        appended += try drain(appendingTo: &output)
        if packet == nil { appended += try flushConverter(appendingTo: &output) }
        return appended
    }

    /// Takes every frame the decoder has ready.
    private func drain(appendingTo output: inout [Float]) throws(Failure) -> Int {
        var appended = 0
        while true {
            let received = avcodec_receive_frame(codec, frame)
            if received == FFmpegError.tryAgain || received == FFmpegError.endOfFile { return appended }
            guard received >= 0 else { throw .damagedPacket(FFmpegError(code: received, operation: "decoding")) }
            defer { av_frame_unref(frame) }
            do { appended += try convert(appendingTo: &output) } catch { throw .conversion(error) }
        }
    }

    /// Converts the decoded `frame` to the output format and appends it, after the silence
    /// that fills a gap before it.
    private func convert(appendingTo output: inout [Float]) throws(FFmpegError) -> Int {
        guard frame.pointee.nb_samples > 0 else { return 0 }
        try prepareConverter()
        guard let converter, let channels = outputChannels, let rate = outputRate else { return 0 }
        var appended = fillGap(before: frame.pointee.best_effort_timestamp, rate: rate, channels: channels, appendingTo: &output)
        // What the frame can give at most, with what the converter still holds from a rate change.
        let capacity = Int(swr_get_out_samples(converter, frame.pointee.nb_samples))
        guard capacity > 0 else { return appended }
        let start = output.count
        output.append(contentsOf: repeatElement(0, count: capacity * channels))
        let converted = output.withUnsafeMutableBufferPointer { buffer in
            let out = UnsafeMutableRawPointer(buffer.baseAddress! + start).assumingMemoryBound(to: UInt8.self)
            return earshot_swr_convert_frame(converter, out, Int32(capacity), frame)
        }
        guard converted >= 0 else {
            output.removeLast(capacity * channels)
            throw FFmpegError(code: converted, operation: "converting samples")
        }
        output.removeLast((capacity - Int(converted)) * channels)
        appended += Int(converted)
        if let due = nextTime { nextTime = due + Double(converted) / Double(rate) }
        return appended
    }

    /// Appends silence for a jump of the timestamps ahead of where the output stands (at most
    /// `longestGapFilled`); returns the frames appended.
    private func fillGap(before timestamp: Int64, rate: Int, channels: Int, appendingTo output: inout [Float]) -> Int {
        guard timestamp != Int64.min, timeBase > 0 else { return 0 }
        let time = Double(timestamp) * timeBase
        guard let due = nextTime else {
            nextTime = time
            return 0
        }
        let gap = time - due
        // A long jump either way starts a new timeline, joined without a gap; a small overlap
        // is the container's rounding.
        guard gap <= Self.longestGapFilled, gap >= -Self.longestOverlap else {
            nextTime = time
            return 0
        }
        guard gap >= Self.shortestGapFilled else { return 0 }
        let frames = Int((gap * Double(rate)).rounded())
        output.append(contentsOf: repeatElement(0, count: frames * channels))
        silenceFilled += Double(frames) / Double(rate)
        nextTime = due + Double(frames) / Double(rate)
        return frames
    }

    /// Appends what the converter still holds (after a rate change, its filter's tail).
    private func flushConverter(appendingTo output: inout [Float]) throws(Failure) -> Int {
        guard let converter, let channels = outputChannels else { return 0 }
        let capacity = Int(swr_get_out_samples(converter, 0))
        guard capacity > 0 else { return 0 }
        let start = output.count
        output.append(contentsOf: repeatElement(0, count: capacity * channels))
        let flushed = output.withUnsafeMutableBufferPointer { buffer in
            earshot_swr_flush(converter, UnsafeMutableRawPointer(buffer.baseAddress! + start).assumingMemoryBound(to: UInt8.self), Int32(capacity))
        }
        guard flushed >= 0 else {
            output.removeLast(capacity * channels)
            throw .conversion(FFmpegError(code: flushed, operation: "converting samples"))
        }
        output.removeLast((capacity - Int(flushed)) * channels)
        return Int(flushed)
    }

    /// Makes the converter on the first frame, and again when the input's layout, sample format
    /// or rate changes; the output format stays the first frame's.
    private func prepareConverter() throws(FFmpegError) {
        var layout = AVChannelLayout()
        defer { av_channel_layout_uninit(&layout) }
        // Layouts in another order than the native one (unspecified, custom, ambisonic) are taken
        // as the default layout of their channel count: every channel is mixed to mono anyway.
        if frame.pointee.ch_layout.order == AV_CHANNEL_ORDER_NATIVE, av_channel_layout_check(&frame.pointee.ch_layout) != 0 {
            _ = av_channel_layout_copy(&layout, &frame.pointee.ch_layout)
        } else {
            av_channel_layout_default(&layout, max(1, frame.pointee.ch_layout.nb_channels))
        }
        let format = frame.pointee.format, rate = frame.pointee.sample_rate
        if var current = converterInput, converter != nil, current.format == format, current.rate == rate,
           av_channel_layout_compare(&current.layout, &layout) == 0 {
            return
        }
        if outputRate == nil {
            guard rate > 0 else { throw FFmpegError(code: 0, operation: "the decoder gave no sample rate") }
            _ = av_channel_layout_copy(&outputLayout, &layout)
            outputRate = rate > 96_000 ? 48_000 : Int(rate)
            outputChannels = Int(layout.nb_channels)
        }
        swr_free(&converter)
        var made: OpaquePointer?
        var status = swr_alloc_set_opts2(&made, &outputLayout, AV_SAMPLE_FMT_FLT, Int32(outputRate!),
                                         &layout, AVSampleFormat(format), rate, 0, nil)
        if status >= 0 { status = swr_init(made) }
        guard status >= 0 else {
            swr_free(&made)
            throw FFmpegError(code: status, operation: "preparing the sample conversion")
        }
        converter = made
        if var old = converterInput?.layout { av_channel_layout_uninit(&old) }
        var kept = AVChannelLayout()
        _ = av_channel_layout_copy(&kept, &layout)
        converterInput = (kept, format, rate)
    }
}
