import ArgumentParser
import EarshotMedia

/// `--audio-track N` / `--audio-language LANG`: which audio track of a video or broadcast file
/// to read (MP4, MOV, Matroska/WebM, MPEG-TS), for every input of the command. Audio files hold
/// one track, without a language; `.earsig` inputs have no tracks and ignore both.
struct AudioTrackOptions: ParsableArguments {
    @Option(name: .customLong("audio-track"), help: ArgumentHelp(
        "Read the Nth audio track of video files (from 1, audio tracks only; default: the file's default track).",
        valueName: "N"))
    var number: Int?

    @Option(name: .customLong("audio-language"), help: ArgumentHelp(
        "Read the audio track tagged with this language (ISO 639-2, as eng or fra; fre finds fra too).", valueName: "code"))
    var language: String?

    func validate() throws {
        if number != nil, language != nil { throw ValidationError("give --audio-track or --audio-language, not both") }
        if let number, number < 1 { throw ValidationError("--audio-track counts from 1") }
        if let language, language.isEmpty || language.count > 16
            || !language.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || $0 == "-") }) {
            throw ValidationError("--audio-language takes a language code such as eng or fra")
        }
    }

    var choice: AudioTrackChoice {
        if let number { return .number(number) }
        if let language { return .language(language) }
        return .containerDefault
    }
}
