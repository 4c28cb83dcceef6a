import EarshotAudio
import EarshotCore
import EarshotTestSupport
import Foundation
import EarshotSystem

/// One recording of the corpus, decoded to mono at the analysis rate.
struct CorpusFile {
    /// Media item id: the file stem (made unique with the parent folder if two stems collide).
    var id: String
    /// Path relative to the corpus root, for reports.
    var name: String
    var samples: [Float]
    /// The source file (absolute); nil for synthetic music.
    var path: String? = nil
    /// Files whose audio is related (a remaster of the same piece) share a group; hold-out is by
    /// group so a held-out negative never has a sibling in the catalog.
    var group: String

    var duration: Double { Double(samples.count) / FingerprintParameters.sampleRate }
}

struct Corpus {
    var files: [CorpusFile]
    var description: String
    var skipped: [String]
    var decodeSeconds: Double
    /// Files read from the decode cache instead of decoded.
    var filesFromCache = 0

    var totalDuration: Double { files.reduce(0) { $0 + $1.duration } }

    static let minimumDuration = 15.0
    static let audioExtensions: Set<String> = ["ogg", "oga", "opus", "wav", "flac", "mp3", "aif", "aiff"]

    /// Loads the corpus listed by scripts/fetch-benchmark-corpus.sh (corpus.tsv), or every audio
    /// file under `directory` when there is no list.
    static func load(directory: String, useCache: Bool) throws -> Corpus {
        let manifest = "\(directory)/corpus.tsv"
        var paths: [String] = []
        if let text = try? String(contentsOfFile: manifest, encoding: .utf8) {
            for line in text.split(separator: "\n") {
                let fields = line.split(separator: "\t", maxSplits: 1)
                if fields.count == 2 { paths.append(String(fields[1])) }
            }
        } else if let walker = FileManager.default.enumerator(atPath: directory) {
            for case let rel as String in walker
            where audioExtensions.contains((rel as NSString).pathExtension.lowercased()) {
                paths.append("\(directory)/\(rel)")
            }
            paths.sort()
        }
        guard !paths.isEmpty else {
            throw BenchError("""
                no corpus in \(directory): run scripts/fetch-benchmark-corpus.sh first \
                (or pass --synthetic to use synthetic music)
                """)
        }
        let rootPrefix = "\(directory)/root/"
        let names = paths.map { $0.hasPrefix(rootPrefix) ? String($0.dropFirst(rootPrefix.count)) : $0 }

        // Decode on every core: decoding is not what is measured.
        final class Slots: @unchecked Sendable {
            let lock = NSLock()
            var decoded: [[Float]?]
            var errors: [String?]
            var cursor = 0
            var fromCache = 0
            init(_ n: Int) { decoded = Array(repeating: nil, count: n); errors = Array(repeating: nil, count: n) }
        }
        let slots = Slots(paths.count)
        let t0 = Clock.now()
        let workers = max(1, min(Machine.cores, paths.count))
        let pathsCopy = paths
        let cache: String? = useCache ? "\(directory)/decoded" : nil
        if let cache { try? FileManager.default.createDirectory(atPath: cache, withIntermediateDirectories: true) }
        DispatchQueue.concurrentPerform(iterations: workers) { _ in
            while true {
                slots.lock.lock()
                let i = slots.cursor
                slots.cursor += 1
                slots.lock.unlock()
                guard i < pathsCopy.count else { return }
                do {
                    let cached = cache.flatMap { DecodeCache.path(for: pathsCopy[i], in: $0) }
                    if let cached, let mono = DecodeCache.read(cached) {
                        slots.lock.lock(); slots.decoded[i] = mono; slots.fromCache += 1; slots.lock.unlock()
                        continue
                    }
                    let buffer = try AudioFileDecoder.decode(path: pathsCopy[i])
                    let mono = try AudioConversion.monoSamples(from: buffer, at: FingerprintParameters.sampleRate)
                    if let cached { DecodeCache.write(mono, to: cached) }
                    slots.lock.lock(); slots.decoded[i] = mono; slots.lock.unlock()
                } catch {
                    slots.lock.lock(); slots.errors[i] = "\(error)"; slots.lock.unlock()
                }
            }
        }
        let decodeSeconds = Clock.now() - t0

        var files: [CorpusFile] = []
        var skipped: [String] = []
        let stems = names.map { (($0 as NSString).lastPathComponent as NSString).deletingPathExtension }
        for (i, name) in names.enumerated() {
            guard let samples = slots.decoded[i] else {
                skipped.append("\(name): \(slots.errors[i] ?? "not decoded")")
                continue
            }
            let seconds = Double(samples.count) / FingerprintParameters.sampleRate
            guard seconds >= minimumDuration else {
                skipped.append(String(format: "%@: %.1f s is shorter than %.0f s", name, seconds, minimumDuration))
                continue
            }
            var id = stems[i]
            if stems.filter({ $0 == id }).count > 1 {
                id = "\(((name as NSString).deletingLastPathComponent as NSString).lastPathComponent)-\(id)"
            }
            files.append(CorpusFile(id: id, name: name, samples: samples, path: paths[i], group: groupKey(stems[i])))
        }
        guard files.count >= 2 else { throw BenchError("the corpus needs at least two usable files, found \(files.count)") }
        return Corpus(files: files, description: packagesDescription(directory),
                      skipped: skipped, decodeSeconds: decodeSeconds, filesFromCache: slots.fromCache)
    }

    /// The Debian packages the fetch script downloaded into `directory`/debs ("warzone2100-music,
    /// boswars-data" for the default corpus), named as the conditions table names the corpus.
    static func packagesDescription(_ directory: String) -> String {
        let debs = (try? FileManager.default.contentsOfDirectory(atPath: "\(directory)/debs")) ?? []
        let names = debs.filter { $0.hasSuffix(".deb") }.compactMap { $0.split(separator: "_").first.map(String.init) }.sorted()
        return names.isEmpty ? "the audio files in \(directory)" : "Debian packages " + names.joined(separator: ", ")
    }

    /// "track3_enhanced" and "track3" are versions of the same piece.
    static func groupKey(_ stem: String) -> String {
        var s = stem.lowercased()
        for suffix in ["_enhanced", "-enhanced", "_remaster", "_remix"] where s.hasSuffix(suffix) {
            s.removeLast(suffix.count)
        }
        return s
    }

    /// Music made from seeds, for runs without the corpus download.
    static func synthetic(files: Int = 24, duration: Double = 120) -> Corpus {
        let t0 = Clock.now()
        let made = (0..<files).map { i in
            CorpusFile(id: String(format: "synthetic-%02d", i), name: "SyntheticMusic seed \(i + 1)",
                       samples: SyntheticMusic.make(seed: UInt64(i + 1), duration: duration), group: "s\(i)")
        }
        return Corpus(files: made, description: "synthetic (EarshotTestSupport.SyntheticMusic, \(files) × \(Int(duration)) s)",
                      skipped: [], decodeSeconds: Clock.now() - t0)
    }

    /// Splits the files into catalog and held-out (negative) sets: about `fraction` of the files
    /// are held out, chosen by seed, whole groups at a time.
    func split(seed: UInt64, fraction: Double = 0.2) -> (catalog: [Int], heldOut: [Int]) {
        var groups: [String: [Int]] = [:]
        for (i, f) in files.enumerated() { groups[f.group, default: []].append(i) }
        var keys = groups.keys.sorted()
        var rng = SeededRandom(seed: deriveSeed(seed, 0xC0FFEE))
        keys.shuffle(using: &rng)
        let wanted = max(1, Int((Double(files.count) * fraction).rounded()))
        var heldOut: [Int] = []
        for k in keys where heldOut.count < wanted {
            // Never hold out everything.
            if heldOut.count + groups[k]!.count >= files.count { continue }
            heldOut += groups[k]!
        }
        heldOut.sort()
        let catalog = files.indices.filter { !heldOut.contains($0) }
        return (catalog, heldOut)
    }
}

/// Decoded 16 kHz mono audio kept beside the corpus (benchmarks/cache/decoded), so later runs
/// skip the minute of Opus decoding. Keyed by the source's path, size and modification time;
/// `--no-decode-cache` bypasses it (do that after changing the decoder or resampler).
enum DecodeCache {
    static func path(for source: String, in directory: String) -> String? {
        guard let a = try? FileManager.default.attributesOfItem(atPath: source),
            let size = a[.size] as? Int, let date = a[.modificationDate] as? Date
        else { return nil }
        var h: UInt64 = 0xCBF2_9CE4_8422_2325  // FNV-1a
        for b in Array("\(source)|\(size)|\(date.timeIntervalSince1970)|16000".utf8) {
            h = (h ^ UInt64(b)) &* 0x100_0000_01B3
        }
        let stem = ((source as NSString).lastPathComponent as NSString).deletingPathExtension
        return "\(directory)/\(stem)-\(String(h, radix: 16)).f32"
    }

    static func read(_ path: String) -> [Float]? {
        guard let data = FileManager.default.contents(atPath: path), data.count >= 4, data.count % 4 == 0 else { return nil }
        let n = data.count / 4
        return [Float](unsafeUninitializedCapacity: n) { buffer, count in
            count = data.copyBytes(to: buffer) / 4  // little-endian hosts only (x86, ARM)
        }
    }

    static func write(_ samples: [Float], to path: String) {
        let bytes = samples.withUnsafeBytes { Array($0) }  // little-endian hosts only (x86, ARM)
        try? AtomicFile.write(bytes, to: path)
    }
}
