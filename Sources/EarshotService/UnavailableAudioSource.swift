import EarshotAudio
import EarshotCore

/// A source that could not be made (an unreadable file): it stays failed with the reason, so the
/// session shows the problem like any capture failure instead of the daemon stopping.
final class UnavailableAudioSource: AudioSource {
    private let error: EarshotError

    init(_ error: EarshotError) {
        self.error = error
    }

    var sampleRate: Double? { nil }
    var state: AudioSourceState { .failed(error) }
    var statistics: AudioSourceStatistics { AudioSourceStatistics() }
    func start() {}
    func stop() {}
    func read(into buffer: UnsafeMutableBufferPointer<Float>) -> Int { 0 }
    func waitForSamples(timeout: Double) -> Bool { false }
}
