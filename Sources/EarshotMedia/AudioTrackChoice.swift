import FFmpeg

/// Which audio track of a file to read: the container's default, a number, or a language.
public enum AudioTrackChoice: Sendable, Equatable {
    /// The track the container marks as default, else the first.
    case containerDefault
    /// The Nth audio track (from 1, in the file's order, counting audio tracks only).
    case number(Int)
    /// The track tagged with this language (ISO 639-2, as "eng"; compared without case, and
    /// the bibliographic and terminology codes of a language alike: "fre" and "fra"); the
    /// default among several such tracks, else the first.
    case language(String)

    /// The chosen track among `tracks` (the file's audio streams in order), as its position in
    /// `tracks`, or the reason none fits.
    func pick(from tracks: [MediaStream]) -> Result<Int, ChoiceProblem> {
        guard !tracks.isEmpty else { return .failure(.noAudio) }
        switch self {
        case .containerDefault:
            return .success(tracks.firstIndex(where: \.isDefault) ?? 0)
        case .number(let n):
            guard n >= 1, n <= tracks.count else { return .failure(.noSuchNumber(n)) }
            return .success(n - 1)
        case .language(let wanted):
            let code = Self.terminologyCode(wanted)
            let matching = tracks.indices.filter { tracks[$0].language.map(Self.terminologyCode) == code }
            guard let first = matching.first else { return .failure(.noSuchLanguage(wanted)) }
            return .success(matching.first(where: { tracks[$0].isDefault }) ?? first)
        }
    }

    /// ISO 639-2 gives twenty languages two codes; Matroska and DVB files often carry the
    /// bibliographic one ("ger"), people often type the terminology one ("deu").
    static func terminologyCode(_ code: String) -> String {
        let lower = code.lowercased()
        return bibliographicToTerminology[lower] ?? lower
    }

    private static let bibliographicToTerminology: [String: String] = [
        "alb": "sqi", "arm": "hye", "baq": "eus", "bur": "mya", "chi": "zho", "cze": "ces", "dut": "nld", "fre": "fra",
        "geo": "kat", "ger": "deu", "gre": "ell", "ice": "isl", "mac": "mkd", "mao": "mri", "may": "msa", "per": "fas",
        "rum": "ron", "slo": "slk", "tib": "bod", "wel": "cym",
    ]

    enum ChoiceProblem: Error {
        case noAudio, noSuchNumber(Int), noSuchLanguage(String)
    }

    /// The option that asked for the choice, as the user typed it.
    var option: String {
        switch self {
        case .containerDefault: ""
        case .number(let n): "--audio-track \(n)"
        case .language(let language): "--audio-language \(language)"
        }
    }
}
