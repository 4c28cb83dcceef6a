import EarshotCore
import EarshotSync

/// An audio file as an `AudioSource`, delivered as fast as it is read.
///
/// Any file `AudioFileReader` opens, mixed to mono at the file's own rate. There is no thread
/// and no pacing: each `read(into:)` decodes what it needs, so a consumer can run through an
/// hour of audio in seconds (tests, batch checks). After the last sample the state is
/// `.finished`; a file that turns out to be corrupt part way ends in `.failed`.
public final class FileAudioSource: AudioSource {
    /// The file's path.
    public let path: String

    private struct Inner {
        var stream: MonoFileStream?
        var state = AudioSourceState.idle
        var statistics = AudioSourceStatistics()
    }
    private let inner: Locked<Inner>
    private let rate: Double

    /// Opens `path`. Throws `invalidAudioFormat` naming the file and the problem (missing,
    /// not audio, unsupported rate …), as `AudioFileReader` does.
    public init(path: String) throws(EarshotError) {
        let stream = try MonoFileStream(path: path)
        self.path = path
        rate = stream.sampleRate
        inner = Locked(Inner(stream: stream))
    }

    public var sampleRate: Double? { rate }
    public var state: AudioSourceState { inner.withLock { $0.state } }
    public var statistics: AudioSourceStatistics { inner.withLock { $0.statistics } }

    public func start() {
        inner.withLock { s in
            if case .idle = s.state { s.state = .running }
        }
    }

    public func stop() {
        inner.withLock { s in
            s.stream = nil  // closes the file
            s.state = .stopped
        }
    }

    public func read(into buffer: UnsafeMutableBufferPointer<Float>) -> Int {
        inner.withLock { s in
            guard case .running = s.state, let stream = s.stream else { return 0 }
            do throws(EarshotError) {
                let count = try stream.read(into: buffer)
                s.statistics.framesCaptured = stream.framesDecoded
                if count == 0 {
                    s.state = .finished
                    s.stream = nil
                }
                return count
            } catch {
                s.state = .failed(error)
                s.stream = nil
                return 0
            }
        }
    }

    /// Never sleeps: the next samples are always ready until the file ends.
    public func waitForSamples(timeout: Double) -> Bool {
        if case .running = state { return true }
        return false
    }
}
