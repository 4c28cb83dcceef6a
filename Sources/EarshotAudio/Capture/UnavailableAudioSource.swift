import EarshotCore

/// A source that could not be made (an unreadable file, a bad device setting): failed from the
/// start with the reason, delivering nothing, so a session shows the problem like any capture
/// failure instead of its owner giving up.
public final class UnavailableAudioSource: AudioSource {
    public let error: EarshotError

    public init(_ error: EarshotError) {
        self.error = error
    }

    public var sampleRate: Double? { nil }
    public var state: AudioSourceState { .failed(error) }
    public var statistics: AudioSourceStatistics { AudioSourceStatistics() }
    public func start() {}
    public func stop() {}
    public func read(into buffer: UnsafeMutableBufferPointer<Float>) -> Int { 0 }
    public func waitForSamples(timeout: Double) -> Bool { false }
}
