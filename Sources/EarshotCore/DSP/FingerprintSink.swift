/// Where the audio pipeline delivers mono samples at `FingerprintParameters.sampleRate`: a
/// `Fingerprinter` (a whole signature) or a `RollingFingerprint` (the prerecording window).
public protocol FingerprintSink: AnyObject {
    func append(_ samples: UnsafeBufferPointer<Float>)
}

extension Fingerprinter: FingerprintSink {}
extension RollingFingerprint: FingerprintSink {}
