import EarshotAudio
import EarshotCore
import EarshotTestSupport
import Foundation

// Scratch synthetic experiment (to be replaced by the corpus benchmark).
let sr = 16_000.0
let refCount = 20, refSeconds = 60.0
var catalog = CustomCatalog()
var refs: [[Float]] = []
var peakTotal = 0
let t0 = Date()
for i in 0..<refCount {
    let audio = SyntheticMusic.make(seed: UInt64(i + 1), duration: refSeconds)
    refs.append(audio)
    let g = SignatureGenerator()
    try g.append(PCMBuffer(float32: audio, sampleRate: sr))
    let sig = try g.signature()
    peakTotal += sig.peaks.count
    try catalog.addReferenceSignature(sig, representing: [MediaItem(id: "ref\(i)", title: "Ref \(i)")])
}
let fpTime = Date().timeIntervalSince(t0)
let data = try catalog.dataRepresentation()
print(String(format: "peaks/s %.1f  bytes/h %.0f  fp %.0fx RT", Double(peakTotal) / (Double(refCount) * refSeconds),
             Double(data.count) / (Double(refCount) * refSeconds / 3600), Double(refCount) * refSeconds / fpTime))
let mapped = try MappedCatalog(bytes: data)
let matcher = Matcher(catalog: mapped)
print("entries", mapped.entryCount, "entries/s", Double(mapped.entryCount) / (Double(refCount) * refSeconds))

func query(_ x: [Float]) throws -> Signature {
    let g = SignatureGenerator()
    try g.append(PCMBuffer(float32: x, sampleRate: sr))
    return try g.signature()
}
let conditions: [(String, Double, ([Float], UInt64) -> [Float])] = [
    ("clean10", 10, { x, _ in x }),
    ("clean3", 3, { x, _ in x }),
    ("noise0dB", 10, { x, s in Degradations.addWhiteNoise(x, snr: 0, seed: s) }),
    ("band", 10, { x, _ in Degradations.bandPass(x, low: 300, high: 3400, sampleRate: sr) }),
    ("speed+4", 10, { x, _ in Degradations.changeSpeed(x, by: 1.04) }),
    ("speed-3", 10, { x, _ in Degradations.changeSpeed(x, by: 0.97) }),
    ("reverb+noise5", 10, { x, s in Degradations.addWhiteNoise(Degradations.reverberate(x, rt60: 0.5, sampleRate: sr, seed: s), snr: 5, seed: s + 1) }),
]
var rng = SeededRandom(seed: 42)
for (name, len, degrade) in conditions {
    var ok = 0, n = 0, offErr: [Double] = [], skewErr: [Double] = [], times: [Double] = [], inl: [Int] = []
    let speed = name.hasPrefix("speed+4") ? 1.04 : name.hasPrefix("speed-3") ? 0.97 : 1.0
    for q in 0..<40 {
        let r = Int(rng.unit() * Double(refCount))
        let start = 2 + rng.unit() * (refSeconds - len * 1.1 - 4)
        let span = Int(len * speed * sr)
        let excerpt = Array(refs[r][Int(start * sr)..<(Int(start * sr) + span)])
        let sig = try query(degrade(excerpt, UInt64(q)))
        let t = Date()
        let res = matcher.match(sig)
        times.append(Date().timeIntervalSince(t) * 1000)
        n += 1
        if let best = res.mediaItems.first {
            inl.append(Int(best.confidence * 100))
            if best.mediaItem.id == "ref\(r)", abs(best.matchOffset - start) < 0.1 { ok += 1 }
            offErr.append(abs(best.matchOffset - start))
            skewErr.append(abs(best.frequencySkew - (speed - 1)))
        }
    }
    offErr.sort(); skewErr.sort(); times.sort()
    print(String(format: "%-14@ recall %3d%%  offP50 %.3f  skewP50 %.4f  match p50 %.2f ms", name as NSString, ok * 100 / n,
                 offErr.isEmpty ? -1 : offErr[offErr.count / 2], skewErr.isEmpty ? -1 : skewErr[skewErr.count / 2], times[times.count / 2]))
}
// negatives
var fp = 0
for q in 0..<40 {
    let x = SyntheticMusic.make(seed: 1000 + UInt64(q), duration: 10)
    if case .match(let items) = matcher.match(try query(x)) { fp += 1; print("FP conf", items[0].confidence) }
}
print("false positives \(fp)/40")
