/// The fixed front-end parameters of signature version 1.
///
/// Changing any of these makes new signatures incompatible with catalogs already built, so they
/// are recorded in every `.earsig` and `.earcat` header and checked when files are read.
public enum FingerprintParameters {
    /// Analysis sample rate: all audio is converted to mono at this rate first.
    public static let sampleRate: Double = 16_000
    /// FFT length in samples (64 ms): 15.6 Hz bins, enough to separate harmonics of speech and music.
    public static let fftSize = 1024
    /// Hop between frames in samples (8 ms): the time resolution of peaks and offsets.
    public static let hopSize = 128
    /// Seconds per frame hop.
    public static let hopDuration = Double(hopSize) / sampleRate

    /// Lowest FFT bin considered for peaks (250 Hz): below it room rumble and hum dominate.
    public static let minimumBin = 16
    /// One past the highest bin considered for peaks (4 kHz): TV speakers, phone bands and lossy
    /// codecs keep this range; higher peaks rarely survive a living room.
    public static let maximumBin = 256

    /// Half-width of the peak neighbourhood in bins: a peak is the largest value within ±this.
    public static let peakBinRadius = 20
    /// Half-width of the peak neighbourhood in frames (±128 ms).
    public static let peakFrameRadius = 16
    /// Peaks below this power (about −100 dBFS for a full-scale sine) are ignored: digital silence.
    public static let powerFloor: Float = 1e-6
}
