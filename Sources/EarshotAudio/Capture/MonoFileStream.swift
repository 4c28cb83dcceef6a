import EarshotCore

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

    private var reader: AudioFileReader
    /// Decoded samples not handed out yet: `pending[pendingStart...]`.
    private var pending: [Float] = []
    private var pendingStart = 0
    private var atEnd = false
    /// Frames decoded since the file was (last) opened.
    private(set) var framesDecoded = 0

    /// Frames decoded per chunk: large enough to make libsndfile's per-call cost vanish, small
    /// enough (a quarter of a second at 16 kHz) not to matter for memory.
    private static let chunkFrames = 4096

    /// Opens `path`; throws `invalidAudioFormat` as `AudioFileReader` does.
    init(path: String) throws(EarshotError) {
        self.path = path
        reader = try AudioFileReader(path: path)
        sampleRate = reader.format.sampleRate
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

    /// Starts over from the beginning of the file.
    func rewind() throws(EarshotError) {
        reader = try AudioFileReader(path: path)
        pending.removeAll(keepingCapacity: true)
        pendingStart = 0
        atEnd = false
        framesDecoded = 0
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
