import EarshotCore

/// Live audio from an ALSA capture device, as an `AudioSource`.
///
/// `start()` spawns the capture thread ("earshot-capture"), which opens the device, negotiates
/// its parameters (see `AlsaCaptureConfiguration`) and then, period by period, mixes what it
/// reads to mono floats into a preallocated ring that `read(into:)` drains. The thread never
/// logs; what an owner would log is here to read: `state` (with the reason of a failure),
/// `parameters` once the device is open, `realtimeScheduling` once the thread runs, and
/// `statistics`.
///
/// Faults never end capture for good: overruns are recovered and counted; a device that fails,
/// goes quiet, vanishes or never existed puts the source in `.failed(reason)` and is reopened
/// after 0.5 s, then 1, 2, 4 and 8 s between attempts (`.retrying` while opening), until it works
/// again or `stop()` is called. A reopened device must give the rate the source started with.
///
/// Tests and demos can use ALSA's `file` PCM (an asoundrc entry of `type file` with an
/// `infile` and a `null` slave): it reads raw samples from the file in whatever format was
/// negotiated, but it is not paced — it delivers as fast as it is read — and at the end of the
/// infile alsa-lib 1.2.8 keeps returning full periods, which arrive here as silence. Give such a
/// source a ring large enough for the whole file (`bufferDuration`), and no realtime priority.
public final class AlsaAudioSource: AudioSource {
    private let supervisor: CaptureSupervisor

    /// A source for `configuration.device`; nothing is opened until `start()`.
    ///
    /// - Parameters:
    ///   - bufferDuration: seconds of audio the ring between the capture thread and the consumer
    ///     holds (at 48 kHz, or at the asked rate if higher); samples that do not fit are
    ///     dropped and counted. The default rides out a consumer that stalls for a few seconds.
    ///   - realtimePriority: the `SCHED_FIFO` priority to try for the capture thread, or nil for
    ///     normal scheduling. Whether it was granted is in `realtimeScheduling`.
    ///   - stallTimeout: seconds without any audio after which the device counts as failed and
    ///     is reopened.
    public convenience init(
        configuration: AlsaCaptureConfiguration = AlsaCaptureConfiguration(),
        bufferDuration: Double = 4, realtimePriority: Int32? = 10, stallTimeout: Double = 2
    ) {
        self.init(
            configuration: configuration, bufferDuration: bufferDuration, realtimePriority: realtimePriority,
            retryDelays: 0.5...8, stallTimeout: stallTimeout
        ) { configuration, rate throws(EarshotError) in
            try AlsaCapture(configuration: configuration, requiredSampleRate: rate)
        }
    }

    /// The designated initialiser, with the retry pauses and the device opener replaceable for
    /// tests. With `retryDelays` nil, a failure is final.
    init(
        configuration: AlsaCaptureConfiguration, bufferDuration: Double, realtimePriority: Int32?,
        retryDelays: ClosedRange<Double>?, stallTimeout: Double, opener: @escaping CaptureSupervisor.Opener
    ) {
        let rate = Double(max(configuration.sampleRate, 48_000))
        let capacity = Int((max(bufferDuration, 0.1) * rate).rounded(.up))
        supervisor = CaptureSupervisor(
            configuration: configuration, ringCapacity: capacity, realtimePriority: realtimePriority,
            retryDelays: retryDelays, stallTimeout: stallTimeout, opener: opener)
    }

    deinit {
        supervisor.stop()
    }

    /// What was asked of the device.
    public var configuration: AlsaCaptureConfiguration { supervisor.configuration }
    /// What the device agreed to when it was last opened; nil before that.
    public var parameters: AlsaCaptureParameters? { supervisor.parameters }
    /// How the capture thread is scheduled; nil until it runs. For the owner to log once.
    public var realtimeScheduling: RealtimeScheduling? { supervisor.scheduling }
    /// The capacity of the ring between capture thread and consumer, in samples.
    public var bufferCapacity: Int { supervisor.ring.capacity }

    // MARK: AudioSource

    public var sampleRate: Double? { supervisor.sampleRate.map(Double.init) }
    public var state: AudioSourceState { supervisor.state }
    public var statistics: AudioSourceStatistics { supervisor.statistics }

    public func start() { supervisor.start() }
    public func stop() { supervisor.stop() }

    public func read(into buffer: UnsafeMutableBufferPointer<Float>) -> Int {
        supervisor.ring.read(into: buffer)
    }

    public func waitForSamples(timeout: Double) -> Bool {
        let ring = supervisor.ring
        let state = supervisor.state
        _ = supervisor.dataSignal.wait(timeout: timeout) {
            ring.availableSamples > 0 || supervisor.state != state
        }
        return ring.availableSamples > 0
    }
}
