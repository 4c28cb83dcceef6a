import CFFmpeg

/// What a container says about one of its streams.
public struct MediaStream: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case audio, video, subtitle, data, other
    }

    /// The stream's index in the container (FFmpeg's numbering, from 0, all kinds together).
    public let index: Int
    public let kind: Kind
    /// FFmpeg's short codec name ("aac", "ac3", "h264"), or "unknown" for a codec FFmpeg does
    /// not know.
    public let codecName: String
    /// False when FFmpeg here has no decoder for the codec (or does not know the codec at all).
    public let isDecodable: Bool
    /// The "language" tag (ISO 639-2, as "eng"), when the container gives one.
    public let language: String?
    /// The "title" tag, when the container gives one.
    public let title: String?
    /// The container marks the stream as the default of its kind.
    public let isDefault: Bool
    /// Audio only: channels and rate as the container states them (0 when it does not).
    public let channelCount: Int
    public let sampleRate: Int
    /// The stream's length in seconds as the file states it: a Matroska DURATION tag (the
    /// track's end), else the stream header's duration in a container whose header states
    /// lengths (MP4, MOV, Matroska). Nil where FFmpeg would only estimate it, from the last
    /// timestamp (MPEG-TS) or the bit rate (raw AAC), since a cut file changes such estimates too.
    public let duration: Double?
    /// Seconds per unit of the stream's timestamps.
    public let timeBase: Double

    init(_ stream: UnsafeMutablePointer<AVStream>, lengthsAreStated: Bool) {
        let parameters = stream.pointee.codecpar.pointee
        index = Int(stream.pointee.index)
        switch parameters.codec_type {
        case AVMEDIA_TYPE_AUDIO: kind = .audio
        case AVMEDIA_TYPE_VIDEO: kind = .video
        case AVMEDIA_TYPE_SUBTITLE: kind = .subtitle
        case AVMEDIA_TYPE_DATA: kind = .data
        default: kind = .other
        }
        codecName = parameters.codec_id == AV_CODEC_ID_NONE ? "unknown" : String(cString: avcodec_get_name(parameters.codec_id))
        isDecodable = parameters.codec_id != AV_CODEC_ID_NONE && avcodec_find_decoder(parameters.codec_id) != nil
        language = Self.tag("language", of: stream).flatMap { $0 == "und" ? nil : $0 }
        title = Self.tag("title", of: stream)
        isDefault = stream.pointee.disposition & AV_DISPOSITION_DEFAULT != 0
        channelCount = Int(parameters.ch_layout.nb_channels)
        sampleRate = Int(parameters.sample_rate)
        let base = stream.pointee.time_base
        timeBase = base.den > 0 ? Double(base.num) / Double(base.den) : 0
        if let tagged = Self.tag("DURATION", of: stream).flatMap(Self.seconds(clock:)) {
            duration = tagged
        } else if lengthsAreStated, stream.pointee.duration != Int64.min, stream.pointee.duration > 0, timeBase > 0 {
            duration = Double(stream.pointee.duration) * timeBase
        } else {
            duration = nil
        }
    }

    /// The stream's metadata tag `key` (case-insensitive), nil when absent or empty; control
    /// characters (a title with a line break) become spaces, so the text fits on one line.
    private static func tag(_ key: String, of stream: UnsafeMutablePointer<AVStream>) -> String? {
        guard let entry = av_dict_get(stream.pointee.metadata, key, nil, 0), let value = entry.pointee.value else { return nil }
        let text = String(String.UnicodeScalarView(String(cString: value).unicodeScalars.map {
            $0.properties.generalCategory == .control ? " " : $0
        }))
        return text.isEmpty ? nil : text
    }

    /// Seconds from a Matroska statistics tag such as "01:02:03.500000000".
    static func seconds(clock text: String) -> Double? {
        let parts = text.split(separator: ":")
        guard parts.count == 3, let h = Double(parts[0]), let m = Double(parts[1]), let s = Double(parts[2]),
              h >= 0, m >= 0, s >= 0 else { return nil }
        let total = h * 3600 + m * 60 + s
        return total.isFinite && total > 0 ? total : nil
    }
}
