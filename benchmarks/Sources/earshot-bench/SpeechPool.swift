import EarshotAudio
import EarshotCore
import EarshotTestSupport
import Foundation

/// People talking in the room: a few minutes of conversation made by two speech synthesisers
/// from Debian — Festival's statistical (HTS) and diphone voices (`festival`,
/// `festvox-us-slt-hts`, `festvox-kallpc16k`), which sound close to recorded speech, and
/// espeak-ng's formant voices — several voices taking turns, each sentence followed by a pause,
/// as a pool the speech conditions cut their interference from. Made once per seed into the
/// cache folder. Synthetic speech is cleaner than people are: real talk may do more harm.
enum SpeechPool {
    /// The same sentences two ways: as a conversation (each turn followed by a pause), and
    /// without the pauses or the silence a synthesiser leaves around a sentence (a phone call or
    /// a talk show in the room: the programme never gets a clear moment).
    struct Talk {
        var conversation: [Float]
        var continuous: [Float]
    }

    enum Voice {
        case espeak(String)
        /// A Festival voice, by the Scheme call that selects it.
        case festival(String)
    }

    /// Male and female; American, English, Scottish.
    static let voices: [Voice] = [
        .festival("(voice_cmu_us_slt_arctic_hts)"), .festival("(voice_kal_diphone)"),
        .festival("(voice_cmu_us_slt_arctic_hts)"), .festival("(voice_kal_diphone)"),
        .espeak("en-us+m1"), .espeak("en-gb+f2"), .espeak("en-gb-scotland+m3"), .espeak("en-us+f4"),
    ]

    /// Living-room talk, written for this benchmark.
    static let sentences = [
        "Did you see who won last night? I fell asleep before the end.",
        "Can you pass me the remote, please? No, the other one.",
        "I think we have seen this episode already.",
        "Wait, who is that? I know her from somewhere.",
        "The kettle has just boiled, does anyone want tea?",
        "We should really go to bed after this one.",
        "Turn it up a little, I can hardly hear what they are saying.",
        "That is not how it happened in the book at all.",
        "Mum called earlier, she wants to know if we are coming on Sunday.",
        "Look at that car! How much do you think it costs?",
        "I told you he was the one who did it.",
        "Is it raining again? I left the washing outside.",
        "Shh, this is the good part.",
        "Honestly, I have no idea what is going on any more.",
        "Can we watch something else after this?",
        "The dog needs to go out, whose turn is it?",
        "I love this song, what is it called again?",
        "They always cut to the adverts just when it gets exciting.",
        "Did you remember to buy milk on the way home?",
        "Oh no, not him again. I cannot stand that man.",
        "Hang on, I need to answer this, it is work.",
        "Sorry, what did she just say?",
        "Three more minutes and then the news starts.",
        "I am going to make some toast, do you want some?",
    ]

    /// About `seconds` of conversation at the analysis rate; nil when espeak-ng is missing.
    static func make(cacheDirectory: String, seconds: Double = 240, seed: UInt64) throws -> Talk? {
        guard let espeak = Shell.which("espeak-ng"), let text2wave = Shell.which("text2wave") else { return nil }
        let folder = "\(cacheDirectory)/speech"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let sr = FingerprintParameters.sampleRate
        var rng = SeededRandom(seed: deriveSeed(seed, 0x5EEC))
        var pool: [Float] = []
        var continuous: [Float] = []
        var n = 0
        while Double(pool.count) < seconds * sr {
            let voice = voices[Int(rng.next() % UInt64(voices.count))]
            let sentence = sentences[Int(rng.next() % UInt64(sentences.count))]
            let speed = 140 + Int(rng.next() % 50), pitch = 30 + Int(rng.next() % 40)
            let path = "\(folder)/\(seed)-\(n).wav"
            n += 1
            if !FileManager.default.fileExists(atPath: path) {
                let r: (status: Int32, output: String, error: String)
                switch voice {
                case .espeak(let name):
                    r = try Shell.run(espeak, ["-v", name, "-s", "\(speed)", "-p", "\(pitch)", "-w", path, sentence])
                case .festival(let select):
                    let text = path + ".txt"
                    try sentence.write(toFile: text, atomically: false, encoding: .utf8)
                    r = try Shell.run(text2wave, ["-eval", select, "-o", path, text])
                }
                guard r.status == 0 else { throw BenchError("speech synthesis failed: \(r.error)") }
            }
            let buffer = try AudioFileDecoder.decode(path: path)
            let turn = try AudioConversion.monoSamples(from: buffer, at: sr)
            pool += turn
            continuous += trimmed(turn)
            // A pause between turns: a breath to a couple of seconds.
            pool += [Float](repeating: 0, count: Int((0.2 + 1.8 * rng.unit()) * sr))
        }
        return Talk(conversation: pool, continuous: continuous)
    }

    /// `turn` without the near-silence (60 dB below its loudest sample) at either end.
    static func trimmed(_ turn: [Float]) -> ArraySlice<Float> {
        let loudest = turn.reduce(0) { max($0, abs($1)) }
        guard loudest > 0, let first = turn.firstIndex(where: { abs($0) > loudest * 1e-3 }),
              let last = turn.lastIndex(where: { abs($0) > loudest * 1e-3 })
        else { return [] }
        return turn[first...last]
    }
}
