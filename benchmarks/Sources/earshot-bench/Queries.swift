import EarshotAudio
import EarshotCore
import EarshotTestSupport
import Foundation

/// A recognition condition: how a query excerpt is cut and degraded, and what is true about it.
struct Condition: Sendable {
    enum Transform: Sendable {
        case none
        case whiteNoise(snr: Double)
        case bandPass(low: Double, high: Double)
        case mp3(kbps: Int)
        /// Pitch and tempo together (`Degradations.changeSpeed`), like a PAL speed-up.
        case speed(Double)
        /// A speed change heard in a noisy room: then white noise at `snr` dB.
        case speedNoise(Double, snr: Double)
        /// Tempo only, pitch kept (`sox tempo`).
        case tempo(Double)
        case reverbNoise(rt60: Double, snr: Double)
        /// Pink or brown noise at `snr` dB (negative: louder than the programme).
        case coloredNoise(Degradations.NoiseColor, snr: Double)
        /// People talking over the programme (`SpeechPool`), their active level `ratio` dB
        /// relative to the programme's (0: as loud as the TV; +5: louder); as a conversation,
        /// with pauses between turns, or without any (`SpeechPool.Talk.continuous`).
        case speech(ratio: Double, pauses: Bool = true)
        /// Several people talking at once, over each other's pauses (babble): `talkers` cuts of
        /// the `SpeechPool` summed, their joint active level `ratio` dB relative to the programme's.
        case babble(talkers: Int, ratio: Double)
        /// Another piece of music (a held-out file) mixed in at `ratio` dB.
        case otherMusic(ratio: Double)
        /// Pitch only, tempo kept (`sox pitch`), in cents.
        case pitch(cents: Double)
    }

    var key: String
    var name: String
    /// Query length in seconds (after the transform).
    var length: Double
    var transform: Transform
    /// Recall target in percent, if the condition has one.
    var target: Double?

    /// Source seconds consumed per query second.
    var rate: Double {
        switch transform {
        case .speed(let f), .speedNoise(let f, _), .tempo(let f): f
        default: 1
        }
    }

    /// Seconds of source audio cut for one query.
    var sourceSpan: Double { length * rate }

    /// True frequency skew (query frequency / reference frequency − 1).
    var pitchSkew: Double {
        if case .speed(let f) = transform { return f - 1 }
        if case .speedNoise(let f, _) = transform { return f - 1 }
        if case .pitch(let cents) = transform { return pow(2, cents / 1200) - 1 }
        return 0
    }

    /// True time skew (reference seconds per query second − 1).
    var timeSkew: Double { rate - 1 }

    /// The external program the transform needs.
    var tool: String? {
        switch transform {
        case .mp3: "lame"
        case .tempo, .pitch: "sox"
        case .speech, .babble: "espeak-ng"
        default: nil
        }
    }

    static let all: [Condition] = [
        Condition(key: "clean10", name: "10 s clean", length: 10, transform: .none, target: 98),
        Condition(key: "clean5", name: "5 s clean", length: 5, transform: .none, target: nil),
        Condition(key: "clean3", name: "3 s clean", length: 3, transform: .none, target: 95),
        Condition(key: "noise0", name: "10 s + white noise 0 dB SNR", length: 10, transform: .whiteNoise(snr: 0), target: 98),
        Condition(key: "band", name: "10 s band 300–3400 Hz", length: 10, transform: .bandPass(low: 300, high: 3400), target: 98),
        Condition(key: "mp3", name: "10 s MP3 64 kbps round trip", length: 10, transform: .mp3(kbps: 64), target: 98),
        Condition(key: "speed+4", name: "10 s speed +4 % (pitch+tempo)", length: 10, transform: .speed(1.04), target: 98),
        Condition(key: "speed-3", name: "10 s speed −3 % (pitch+tempo)", length: 10, transform: .speed(0.97), target: 98),
        Condition(key: "tempo+5", name: "10 s tempo +5 % (sox, pitch kept)", length: 10, transform: .tempo(1.05), target: 90),
        Condition(key: "reverb", name: "10 s reverb RT60 0.6 s + noise 5 dB", length: 10,
                  transform: .reverbNoise(rt60: 0.6, snr: 5), target: 90),
        // The living room: people talking, other music, pitch-only shifts, rooms, coloured
        // noise.
        Condition(key: "speech0", name: "10 s + people talking, as loud as the TV (0 dB)", length: 10,
                  transform: .speech(ratio: 0), target: 80),
        Condition(key: "speech+5", name: "10 s + people talking, 5 dB louder than the TV", length: 10,
                  transform: .speech(ratio: 5), target: nil),
        Condition(key: "speech+10", name: "10 s + people talking, 10 dB louder than the TV", length: 10,
                  transform: .speech(ratio: 10), target: nil),
        Condition(key: "music0", name: "10 s + other music at the same level (0 dB)", length: 10,
                  transform: .otherMusic(ratio: 0), target: 90),
        Condition(key: "pitch+1", name: "10 s pitch +1 semitone (sox, tempo kept)", length: 10, transform: .pitch(cents: 100), target: 97),
        Condition(key: "pitch-1", name: "10 s pitch −1 semitone (sox, tempo kept)", length: 10, transform: .pitch(cents: -100), target: 97),
        Condition(key: "room0.3", name: "10 s room RT60 0.3 s + noise 5 dB", length: 10,
                  transform: .reverbNoise(rt60: 0.3, snr: 5), target: 95),
        Condition(key: "room0.8", name: "10 s room RT60 0.8 s + noise 5 dB", length: 10,
                  transform: .reverbNoise(rt60: 0.8, snr: 5), target: 95),
        Condition(key: "pink-5", name: "10 s + pink noise −5 dB SNR", length: 10, transform: .coloredNoise(.pink, snr: -5), target: 90),
        Condition(key: "brown-5", name: "10 s + brown noise −5 dB SNR", length: 10, transform: .coloredNoise(.brown, snr: -5), target: 90),
        // Conditions are only ever appended: seeds follow the position in this list, so the ones
        // above keep their queries.
        Condition(key: "babble0", name: "10 s + two people talking at once, as loud as the TV (0 dB)", length: 10,
                  transform: .babble(talkers: 2, ratio: 0), target: nil),
        // A film or programme sped up (PAL) or slowed, heard in a noisy room.
        Condition(key: "speed+4n5", name: "10 s speed +4 % + white noise 5 dB SNR", length: 10,
                  transform: .speedNoise(1.04, snr: 5), target: nil),
        Condition(key: "speed-3n5", name: "10 s speed −3 % + white noise 5 dB SNR", length: 10,
                  transform: .speedNoise(0.97, snr: 5), target: nil),
        // Talk that never pauses (a phone call, a talk show): in a conversation the programme
        // is heard clearly between turns, which carries a match on its own.
        Condition(key: "speech0-nopause", name: "10 s + people talking without pauses, as loud as the TV (0 dB)", length: 10,
                  transform: .speech(ratio: 0, pauses: false), target: 80),
        Condition(key: "speech+5-nopause", name: "10 s + people talking without pauses, 5 dB louder than the TV", length: 10,
                  transform: .speech(ratio: 5, pauses: false), target: nil),
        // A party or a pub: so many voices that the talk never pauses and no one voice leads.
        Condition(key: "babble6", name: "10 s + six people talking at once, as loud as the TV (0 dB)", length: 10,
                  transform: .babble(talkers: 6, ratio: 0), target: 85),
    ]

    /// The living-room conditions, also measured at scale.
    static let livingRoom = ["speech0", "speech+5", "speech+10", "music0", "pitch+1", "pitch-1", "room0.3", "room0.8", "pink-5", "brown-5",
                             "babble6"]

    /// The longest source span any condition cuts, which bounds where queries may start.
    static var longestSourceSpan: Double { all.map(\.sourceSpan).max()! }
}

/// Where a query is cut from: a recording (index into the query's source list) and a start.
struct QueryPlan: Sendable {
    var source: Int
    /// Start in the source, in samples at the analysis rate.
    var startSample: Int
    var start: Double { Double(startSample) / FingerprintParameters.sampleRate }
}

/// Audio a query may be cut from.
struct Recording {
    var id: String
    var samples: [Float]
    /// Whether the recording is in the catalog (a positive) or not (a negative).
    var inCatalog: Bool
}

enum QueryPlanner {
    /// Margin kept from either end of a recording (seconds).
    static let edge = 2.0

    /// `count` query positions over `sources`, round-robin over a seeded shuffle of the sources
    /// so every recording gets about the same number, each start uniform in
    /// [edge, duration − edge − longest span].
    static func plan(count: Int, sources: [Int], recordings: [Recording], seed: UInt64) -> [QueryPlan] {
        guard !sources.isEmpty, count > 0 else { return [] }
        var rng = SeededRandom(seed: seed)
        var order: [Int] = []
        var plans: [QueryPlan] = []
        let sr = FingerprintParameters.sampleRate
        for _ in 0..<count {
            if order.isEmpty { order = sources.shuffled(using: &rng) }
            let source = order.removeLast()
            let duration = Double(recordings[source].samples.count) / sr
            let room = max(0, duration - 2 * edge - Condition.longestSourceSpan)
            let start = edge + rng.unit() * room
            plans.append(QueryPlan(source: source, startSample: Int(start * sr)))
        }
        return plans
    }
}

/// Makes query audio: cuts an excerpt and applies a condition's transform.
final class QueryMaker {
    let workDirectory: String
    let lame = Shell.which("lame")
    let sox = Shell.which("sox")
    let sampleRate = FingerprintParameters.sampleRate
    /// Talk to play over the programme (`SpeechPool`); nil: speech conditions skip.
    var speech: SpeechPool.Talk?
    /// Music that may play over the programme: held-out files (never the query's own).
    var interferers: [Recording] = []

    init(workDirectory: String) {
        self.workDirectory = workDirectory
    }

    /// Why a condition cannot run here, if it cannot.
    func unavailable(_ condition: Condition) -> String? {
        switch condition.transform {
        case .mp3 where lame == nil: "skipped: lame missing"
        case .tempo where sox == nil, .pitch where sox == nil: "skipped: sox missing"
        case .speech where speech == nil, .babble where speech == nil: "skipped: espeak-ng or festival (text2wave) missing"
        case .otherMusic where interferers.count < 2: "skipped: fewer than two held-out files to play over the programme"
        default: nil
        }
    }

    private func cut(_ samples: [Float], from start: Int, count: Int) -> [Float] {
        let lo = max(0, min(samples.count, start)), hi = max(lo, min(samples.count, start + count))
        return Array(samples[lo..<hi])
    }

    /// The query audio (mono, analysis rate) for `plan` under `condition`.
    func make(_ condition: Condition, from recording: Recording, plan: QueryPlan, seed: UInt64) throws -> [Float] {
        let sr = sampleRate
        let start = plan.startSample
        let span = Int((condition.sourceSpan * sr).rounded())
        let length = Int((condition.length * sr).rounded())
        let x = recording.samples
        switch condition.transform {
        case .none:
            return cut(x, from: start, count: length)
        case .whiteNoise(let snr):
            return Degradations.addWhiteNoise(cut(x, from: start, count: length), snr: snr, seed: seed)
        case .bandPass(let low, let high):
            // Filter from half a second earlier so the filters have settled when the query starts.
            let pre = min(start, Int(0.5 * sr))
            let y = Degradations.bandPass(cut(x, from: start - pre, count: length + pre), low: low, high: high, sampleRate: sr)
            return Array(y[pre...])
        case .speed(let factor):
            let y = Degradations.changeSpeed(cut(x, from: start, count: span), by: factor)
            return Array(y.prefix(length))
        case .speedNoise(let factor, let snr):
            let y = Degradations.changeSpeed(cut(x, from: start, count: span), by: factor)
            return Degradations.addWhiteNoise(Array(y.prefix(length)), snr: snr, seed: seed)
        case .reverbNoise(let rt60, let snr):
            // The room also rings with what played before the query: reverberate with a 1 s pre-roll.
            let pre = min(start, Int(1.0 * sr))
            let wet = Degradations.reverberate(cut(x, from: start - pre, count: length + pre), rt60: rt60,
                                               sampleRate: sr, seed: seed)
            return Degradations.addWhiteNoise(Array(wet[pre...]), snr: snr, seed: seed &+ 1)
        case .coloredNoise(let color, let snr):
            return Degradations.addNoise(cut(x, from: start, count: length), color: color, snr: snr, seed: seed)
        case .speech(let ratio, let pauses):
            guard let pool = pauses ? speech?.conversation : speech?.continuous, pool.count > length
            else { throw BenchError("no speech pool") }
            var rng = SeededRandom(seed: deriveSeed(seed, 0x7A1C))
            let talk = cut(pool, from: Int(rng.next() % UInt64(pool.count - length)), count: length)
            return Degradations.mix(cut(x, from: start, count: length), with: talk, ratio: ratio,
                                    interferencePower: Degradations.activePower(talk, sampleRate: sr))
        case .babble(let talkers, let ratio):
            guard let speech = speech?.conversation, speech.count > length else { throw BenchError("no speech pool") }
            var rng = SeededRandom(seed: deriveSeed(seed, 0xBAB1))
            var talk = cut(speech, from: Int(rng.next() % UInt64(speech.count - length)), count: length)
            for _ in 1..<max(1, talkers) {
                let other = cut(speech, from: Int(rng.next() % UInt64(speech.count - length)), count: length)
                for n in talk.indices { talk[n] += other[n] }
            }
            return Degradations.mix(cut(x, from: start, count: length), with: talk, ratio: ratio,
                                    interferencePower: Degradations.activePower(talk, sampleRate: sr))
        case .otherMusic(let ratio):
            var rng = SeededRandom(seed: deriveSeed(seed, 0x0A5C))
            let others = interferers.filter { $0.id != recording.id && $0.samples.count > length }
            guard !others.isEmpty else { throw BenchError("no other music") }
            let other = others[Int(rng.next() % UInt64(others.count))]
            let music = cut(other.samples, from: Int(rng.next() % UInt64(other.samples.count - length)), count: length)
            return Degradations.mix(cut(x, from: start, count: length), with: music, ratio: ratio)
        case .pitch(let cents):
            guard let sox else { throw BenchError("sox missing") }
            let wav = "\(workDirectory)/pitch-in.wav", out = "\(workDirectory)/pitch-out.wav"
            try WAV.write(cut(x, from: start, count: length), sampleRate: Int(sr), to: wav)
            let r = try Shell.run(sox, ["-R", wav, out, "pitch", String(cents)])  // -R: the same dither every run
            guard r.status == 0 else { throw BenchError("sox failed: \(r.error)") }
            return Array(try decode(out).prefix(length))
        case .mp3(let kbps):
            guard let lame else { throw BenchError("lame missing") }
            let wav = "\(workDirectory)/mp3-in.wav", mp3 = "\(workDirectory)/mp3-out.mp3"
            try WAV.write(cut(x, from: start, count: length), sampleRate: Int(sr), to: wav)
            let r = try Shell.run(lame, ["--quiet", "-b", "\(kbps)", wav, mp3])
            guard r.status == 0 else { throw BenchError("lame failed: \(r.error)") }
            return try decode(mp3)
        case .tempo(let factor):
            guard let sox else { throw BenchError("sox missing") }
            let wav = "\(workDirectory)/tempo-in.wav", out = "\(workDirectory)/tempo-out.wav"
            try WAV.write(cut(x, from: start, count: span), sampleRate: Int(sr), to: wav)
            let r = try Shell.run(sox, ["-R", wav, out, "tempo", String(factor)])  // -R: the same dither every run
            guard r.status == 0 else { throw BenchError("sox failed: \(r.error)") }
            return Array(try decode(out).prefix(length))
        }
    }

    private func decode(_ path: String) throws -> [Float] {
        let buffer = try AudioFileDecoder.decode(path: path)
        return try AudioConversion.monoSamples(from: buffer, at: sampleRate)
    }
}

enum Fingerprint {
    /// The signature of mono audio at the analysis rate.
    static func signature(of samples: [Float]) throws -> Signature {
        let generator = SignatureGenerator()
        try generator.append(PCMBuffer(float32: samples, sampleRate: FingerprintParameters.sampleRate))
        return try generator.signature()
    }

    /// Level of the audio in dB relative to full scale (RMS).
    static func rmsDBFS(_ x: [Float]) -> Double {
        guard !x.isEmpty else { return -200 }
        let power = x.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(x.count)
        return 10 * log10(max(power, 1e-20))
    }
}

/// How much of a query's audio is literally in a reference: the fraction of the query's peaks
/// (from its clean excerpt) that have a reference peak within ±1.5 frames and ±1.5 bins once the
/// query is placed at `offset`. Unrelated audio scores a few percent (the benchmark measures and
/// reports it); a clean excerpt of the reference itself scores most of its peaks. A "false positive" with a high overlap is audio the two files share (a reused
/// loop or sample), which the recognizer is right to find.
enum PeakOverlap {
    static let sharedAudioThreshold = 0.25
    static let similarMaterialThreshold = 0.08

    /// Over the query's peaks that the placement puts inside the reference (a query may start
    /// before the reference's start or run past its end), or over all of them when under a fifth
    /// of the query lies inside.
    static func fraction(query: [Peak], reference: [Peak], offset: Double) -> Double {
        guard !query.isEmpty, !reference.isEmpty else { return 0 }
        let shift = Float(offset / FingerprintParameters.hopDuration)
        let span = (reference[0].time - 1.5)...(reference[reference.count - 1].time + 1.5)
        let inside = query.filter { span.contains($0.time + shift) }
        let counted = inside.count * 5 >= query.count ? inside : query
        var hits = 0
        for q in counted {
            let t = q.time + shift
            // First reference peak at or after t − 1.5 (peaks are in time order).
            var lo = 0, hi = reference.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if reference[mid].time < t - 1.5 { lo = mid + 1 } else { hi = mid }
            }
            var j = lo
            while j < reference.count, reference[j].time <= t + 1.5 {
                if abs(reference[j].bin - q.bin) <= 1.5 { hits += 1; break }
                j += 1
            }
        }
        return Double(hits) / Double(counted.count)
    }
}
