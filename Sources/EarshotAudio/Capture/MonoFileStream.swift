import EarshotCore
import EarshotSystem

/// An audio file decoded to mono floats a chunk at a time, as they are asked for.
///
/// Decoding on demand keeps memory flat however long the file is, and lets a paced source that
/// is read late skip audio without having held it.
///
/// Not thread-safe: its owners keep it inside a `Locked` (a mutex) and use it only under the lock, which is
/// what the unchecked `Sendable` stands for (it lets a caller's buffer meet it under the lock).
final class MonoFileStream: @unchecked Sendable {
    let path: String
    let sampleRate: Double

    private let reader: AudioFileReader
    /// Decoded samples not handed out yet: `pending[pendingStart...]`.
    private var pending: [Float] = []
    private var pendingStart = 0
    private var atEnd = false
    /// Frames decoded since the file was opened.
    private(set) var framesDecoded = 0
    /// The version of the file that was opened, taken just before opening it: any change from
    /// then on (even one during the open) shows in `fileChanged`.
    private let identity: FileIdentity?
    /// `path` as a C string, made once: `fileChanged` runs several times a second on the audio path.
    private let cPath: ContiguousArray<CChar>

    /// Frames decoded per chunk: large enough to make libsndfile's per-call cost vanish, small
    /// enough (a quarter of a second at 16 kHz) not to matter for memory.
    private static let chunkFrames = 4096

    /// Opens `path`; throws `invalidAudioFormat` as `AudioFileReader` does, and when the file's
    /// rate is not `requiredSampleRate` (a file opened again must keep the rate its consumer
    /// already resamples from).
    init(path: String, requiredSampleRate: Double? = nil) throws(EarshotError) {
        self.path = path
        cPath = ContiguousArray(path.utf8CString)
        identity = FileIdentity(path: path)
        reader = try AudioFileReader(path: path)
        sampleRate = reader.format.sampleRate
        if let requiredSampleRate, sampleRate != requiredSampleRate {
            throw .invalidAudioFormat(
                "\(path): the file now has a sample rate of \(Int(sampleRate)) Hz, "
                    + "not \(Int(requiredSampleRate)) Hz as when it was first opened")
        }
    }

    /// Whether the path no longer names the file this stream opened: it was deleted, replaced,
    /// truncated or rewritten since.
    var fileChanged: Bool {
        cPath.withUnsafeBufferPointer { FileIdentity(cPath: $0.baseAddress!) } != identity
    }

    /// Moves up to `buffer.count` samples into `buffer`; returns how many, 0 at the end of the
    /// file. Throws `invalidAudioFormat` if the file turns out to be corrupt part way.
    func read(into buffer: UnsafeMutableBufferPointer<Float>) throws(EarshotError) -> Int {
        var filled = 0
        while filled < buffer.count {
            if pendingStart == pending.count {
                guard try refill() else { break }
            }
            let count = min(buffer.count - filled, pending.count - pendingStart)
            pending.withUnsafeBufferPointer { source in
                (buffer.baseAddress! + filled).update(from: source.baseAddress! + pendingStart, count: count)
            }
            pendingStart += count
            filled += count
        }
        return filled
    }

    /// Decodes and throws away up to `count` samples; returns how many.
    func skip(_ count: Int) throws(EarshotError) -> Int {
        var skipped = 0
        while skipped < count {
            if pendingStart == pending.count {
                guard try refill() else { break }
            }
            let step = min(count - skipped, pending.count - pendingStart)
            pendingStart += step
            skipped += step
        }
        return skipped
    }

    /// Decodes the next chunk into `pending`; false at the end of the file.
    private func refill() throws(EarshotError) -> Bool {
        pending.removeAll(keepingCapacity: true)
        pendingStart = 0
        guard !atEnd else { return false }
        guard let chunk = try reader.read(maxFrames: Self.chunkFrames) else {
            atEnd = true
            return false
        }
        try chunk.appendMono(to: &pending)
        framesDecoded += chunk.frameCount
        return true
    }
}
