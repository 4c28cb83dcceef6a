import EarshotCore

/// Signatures of synthetic audio, made through the real front end (16 kHz mono input).
public enum SyntheticSignature {
    /// The signature of `samples` (mono, analysis rate).
    public static func of(_ samples: [Float]) throws(EarshotError) -> Signature {
        let f = Fingerprinter()
        f.append(samples)
        return try Signature(duration: Double(samples.count) / FingerprintParameters.sampleRate, peaks: f.finish())
    }

    /// The excerpt `start ..< start + duration` seconds of `samples`.
    public static func excerpt(_ samples: [Float], start: Double, duration: Double) -> [Float] {
        let sr = FingerprintParameters.sampleRate
        let lo = max(0, Int(start * sr)), hi = min(samples.count, Int((start + duration) * sr))
        return Array(samples[lo..<hi])
    }
}
