import EarshotAudio
import EarshotLive

/// The audio the daemon listens to, as the configuration names it: its name for logs and
/// snapshots, and how the session opens it (again after every failure).
struct DaemonAudioSource {
    let name: String
    let open: ManagedSession.SourceFactory

    init(_ c: DaemonConfiguration) {
        switch c.source {
        case .alsa:
            name = c.device
            let alsa = AlsaCaptureConfiguration(device: c.device, sampleRate: c.sampleRate, channelCount: c.channels,
                                                periodDuration: Double(c.periodMilliseconds) / 1000)
            open = {
                AlsaAudioSource(configuration: alsa, bufferDuration: c.bufferSeconds,
                                realtimePriority: c.realtimePriority > 0 ? Int32(c.realtimePriority) : nil)
            }
        case .file:
            name = "file:" + c.file
            // A file that is missing, gone or not audio is a capture problem until it is back,
            // as a device would be.
            open = { PacedFileAudioSource(openingAtStart: c.file, loop: c.loop) }
        }
    }
}
