import EarshotCore

/// Decodes whole audio files into memory.
public enum AudioFileDecoder {
    /// Frames asked of libsndfile per call; large enough that call overhead does not matter.
    static let chunkFrames = 65_536
    /// The most samples reserved up front from the file's own frame count: a corrupt header may
    /// claim any length, so beyond this the buffer grows as audio actually arrives.
    static let maximumReservedSamples = 1 << 24

    /// Decodes the audio file at `path` into float32 interleaved samples at the file's native
    /// sample rate and channel count.
    ///
    /// Any format libsndfile reads is accepted (WAV, FLAC, Ogg Vorbis/Opus, MP3, AIFF, …).
    /// Throws `invalidAudioFormat`, with a message that starts with the path, when the file is
    /// missing, a directory, empty, not audio, truncated or corrupt, holds no frames, or has an
    /// unsupported rate or channel count. MP3 files without a LAME/Xing header (as sox writes
    /// them) decode with the encoder's delay and padding included, so they come out some tens of
    /// milliseconds longer than the original audio; with the header (as lame writes them) the
    /// length is exact.
    /// The corresponding C functions are `sf_open` and `sf_readf_float`; see `AudioFileReader`.
    public static func decode(path: String) throws(EarshotError) -> PCMBuffer {
        let reader = try AudioFileReader(path: path)
        let channels = reader.format.channelCount
        var samples: [Float] = []
        if let frames = reader.estimatedFrameCount {
            let (wanted, overflow) = frames.multipliedReportingOverflow(by: channels)
            samples.reserveCapacity(overflow ? maximumReservedSamples : min(wanted, maximumReservedSamples))
        }
        while try reader.read(maxFrames: chunkFrames, appendingTo: &samples) > 0 {}
        guard !samples.isEmpty else {
            throw .invalidAudioFormat("\(path): the file holds no audio (0 frames could be decoded)")
        }
        return try PCMBuffer(float32: samples, sampleRate: reader.format.sampleRate, channelCount: channels)
    }
}
