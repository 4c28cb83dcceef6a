import FFmpeg

/// The audio track a file was read from, for telling the user which one it was.
public struct AudioTrack: Sendable, Equatable {
    /// Its number among the file's audio tracks (from 1) and how many there are.
    public let number: Int
    public let count: Int
    public let stream: MediaStream

    /// "audio track 2 of 2 (ac3, 6 channels, 48 kHz, fra, "Commentaire")".
    public var description: String {
        "audio track \(number) of \(count) (\(Self.summary(of: stream)))"
    }

    /// "ac3, 6 channels, 48 kHz, fra, default, "Commentaire"": what a list of tracks says of each.
    static func summary(of stream: MediaStream, markDefault: Bool = false) -> String {
        var parts = [stream.codecName]
        if stream.channelCount > 0 { parts.append(stream.channelCount == 1 ? "mono" : stream.channelCount == 2 ? "stereo" : "\(stream.channelCount) channels") }
        if stream.sampleRate > 0 { parts.append(stream.sampleRate % 1000 == 0 ? "\(stream.sampleRate / 1000) kHz" : "\(Double(stream.sampleRate) / 1000) kHz") }
        parts.append(stream.language ?? "no language tag")
        if markDefault, stream.isDefault { parts.append("default") }
        if let title = stream.title { parts.append("\"\(title)\"") }
        return parts.joined(separator: ", ")
    }

    /// "1: aac, stereo, 48 kHz, eng, default; 2: ac3, …": the file's audio tracks, for errors.
    static func list(_ tracks: [MediaStream]) -> String {
        tracks.enumerated().map { "\($0.offset + 1): \(summary(of: $0.element, markDefault: true))" }.joined(separator: "; ")
    }
}
