import EarshotAudio
import EarshotCore
import EarshotSync

/// A capture device as a session sees it through its ring, driven by the test: audio is queued
/// as the capture thread would capture it, and the state is set as that thread would publish it.
/// Queued audio stays readable whatever the state, as a ring's does after its device failed.
final class DeviceRingSource: AudioSource, @unchecked Sendable {
    private struct Inner {
        var state = AudioSourceState.idle
        var queued: [Float] = []
        var position = 0
    }
    private let inner = Locked(Inner())

    /// Queues `samples` as captured and moves to `state`, in one step.
    func publish(_ state: AudioSourceState, capturing samples: [Float] = []) {
        inner.withLock { s in
            s.queued += samples
            s.state = state
        }
    }

    /// Samples captured and not read yet.
    var unread: Int { inner.withLock { $0.queued.count - $0.position } }

    var sampleRate: Double? { 16_000 }
    var state: AudioSourceState { inner.withLock { $0.state } }
    var statistics: AudioSourceStatistics { inner.withLock { AudioSourceStatistics(framesCaptured: $0.queued.count) } }
    func start() { inner.withLock { if $0.state == .idle { $0.state = .running } } }
    func stop() { inner.withLock { $0.state = .stopped } }
    func waitForSamples(timeout: Double) -> Bool { unread > 0 }

    func read(into buffer: UnsafeMutableBufferPointer<Float>) -> Int {
        inner.withLock { s in
            let n = min(buffer.count, s.queued.count - s.position)
            for i in 0..<n { buffer[i] = s.queued[s.position + i] }
            s.position += n
            return n
        }
    }
}
