import EarshotAudio
import EarshotCore
import Foundation
import Synchronization

/// An in-memory `AudioSource` for session tests: delivers the given mono samples as fast as
/// they are read (or fails, when told to), so the session's rules can be checked quickly.
final class ScriptedAudioSource: AudioSource, @unchecked Sendable {
    private let lock = NSLock()
    private let samples: [Float]
    private let rate: Double
    private let failure: EarshotError?
    private var position = 0
    private var current: AudioSourceState = .idle
    private var captured = 0
    /// Audio seconds delivered per wall-clock second; nil for all at once.
    private let speed: Double?
    private var startedAt = ContinuousClock.now
    static let started = Atomic<Int>(0)

    init(samples: [Float], sampleRate: Double = 16_000, speed: Double? = nil, failure: EarshotError? = nil) {
        self.samples = samples
        self.speed = speed
        rate = sampleRate
        self.failure = failure
    }

    var sampleRate: Double? { failure == nil ? rate : nil }
    var state: AudioSourceState { lock.withLock { current } }
    var statistics: AudioSourceStatistics { lock.withLock { AudioSourceStatistics(framesCaptured: captured) } }

    func start() {
        Self.started.add(1, ordering: .relaxed)
        lock.withLock {
            current = failure.map { .failed($0) } ?? .running
            startedAt = .now
        }
    }

    func stop() {
        lock.withLock { current = .stopped }
    }

    func read(into buffer: UnsafeMutableBufferPointer<Float>) -> Int {
        lock.withLock {
            guard current == .running || current == .finished else { return 0 }
            var available = samples.count
            if let speed {
                let elapsed = ContinuousClock.now - startedAt
                let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
                available = min(available, Int(seconds * speed * rate))
            }
            let n = max(0, min(buffer.count, available - position))
            for i in 0..<n { buffer[i] = samples[position + i] }
            position += n
            captured += n
            if position == samples.count, current == .running { current = .finished }
            return n
        }
    }

    func waitForSamples(timeout: Double) -> Bool {
        lock.withLock { position < samples.count }
    }
}
