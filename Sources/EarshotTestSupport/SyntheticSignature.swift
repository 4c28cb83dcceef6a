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

    /// `signature`'s peaks, each kept with probability `share` (seeded): a room that leaves a
    /// peak here and there breaks most landmarks, since a landmark needs both of its peaks.
    public static func thinned(_ signature: Signature, keeping share: Double, seed: UInt64) throws(EarshotError) -> Signature {
        var random = SeededRandom(seed: seed)
        return try Signature(duration: signature.duration, peaks: signature.peaks.filter { _ in random.unit() < share })
    }
}
