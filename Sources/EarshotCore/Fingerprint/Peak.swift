/// A spectral peak: a point of locally maximal energy in the time–frequency plane.
///
/// Peaks are the only thing a signature keeps of the audio; they cannot be turned back into sound.
public struct Peak: Equatable, Sendable {
    /// Time in frames (hops of `FingerprintParameters.hopDuration`) from the start of the audio,
    /// refined below one frame by interpolation.
    public var time: Float
    /// Frequency in FFT bins (`sampleRate / fftSize` Hz each), refined below one bin.
    public var bin: Float
    /// Natural log of the spectral power at the peak.
    public var magnitude: Float

    public init(time: Float, bin: Float, magnitude: Float) {
        self.time = time
        self.bin = bin
        self.magnitude = magnitude
    }
}
