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

    /// Half-width of the peak neighbourhood in bins, per frequency region: a peak is the largest
    /// value within ±radius. The radius grows with frequency (about ±0.1 octave, like a
    /// constant-Q analysis), so peaks spread evenly over octaves instead of crowding the weak top
    /// octave, whose peaks are the first to drown in a living room's noise.
    /// Each entry is (first bin of the region, radius).
    public static let peakBinRadii: [(firstBin: Int, radius: Int)] = [(16, 4), (32, 7), (56, 12), (96, 20), (160, 32)]
    /// The largest of `peakBinRadii`.
    public static var maximumPeakBinRadius: Int { peakBinRadii.map(\.radius).max()! }
    /// Bins analysed below `minimumBin` and above `maximumBin` so that a peak at the band edge is
    /// compared with the real spectrum beyond it, not with nothing (bass leaking up to 250 Hz
    /// would otherwise make the lowest bin a peak on every beat).
    public static var lowGuardBins: Int { peakBinRadii[0].radius }
    public static var highGuardBins: Int { peakBinRadii[peakBinRadii.count - 1].radius }
    /// Length of the power spectrum the peak picker receives per frame.
    static var analysedBinCount: Int { lowGuardBins + maximumBin - minimumBin + highGuardBins }
    /// Half-width of the peak neighbourhood in frames (±40 ms).
    public static let peakFrameRadius = 5
    /// Peaks below this power (about −100 dBFS for a full-scale sine) are ignored: digital silence.
    public static let powerFloor: Float = 1e-6
}
