import EarshotCore
import EarshotSync
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Runs capture on its thread for as long as asked: opens the device, runs the capture loop,
/// and when the device fails or never opens, records why and tries again after a pause that
/// doubles from `retryDelays.lowerBound` up to `retryDelays.upperBound`.
///
/// The retrying runs on the capture thread itself, between capture loops, where allocating,
/// locking (to publish the state) and building messages is fine; only `CaptureLoop.run` is held
/// to the no-allocation, no-lock rule. That keeps one thread per device and makes a reopen
/// follow a failure without a hand-over.
///
/// Shared by the thread and its `AlsaAudioSource`; the thread holds it, not the source, so that
/// dropping the source stops the thread.
final class CaptureSupervisor: Sendable {
    typealias Opener = @Sendable (AlsaCaptureConfiguration, _ requiredSampleRate: Int?) throws(EarshotError) -> any CaptureInput

    let configuration: AlsaCaptureConfiguration
    let ring: SampleRing
    let counters = CaptureCounters()
    /// Wakes the consumer for new samples and for state changes.
    let dataSignal = WakeSignal()
    /// Cuts the pause before a retry short when the source is stopped.
    private let stopSignal = WakeSignal()
    private let opener: Opener
    private let retryDelays: ClosedRange<Double>?
    private let stallTimeout: Double
    private let realtimePriority: Int32?
    private let reopenAttempts = Atomic<Int>(0)
    private let reopenGaps = Atomic<Int>(0)

    private struct Status {
        var state = AudioSourceState.idle
        var parameters: AlsaCaptureParameters?
        var sampleRate: Int?
        var scheduling: RealtimeScheduling?
        var thread: NamedThread?
    }
    private let status = Locked(Status())

    init(
        configuration: AlsaCaptureConfiguration, ringCapacity: Int, realtimePriority: Int32?,
        retryDelays: ClosedRange<Double>?, stallTimeout: Double, opener: @escaping Opener
    ) {
        self.configuration = configuration
        self.ring = SampleRing(minimumCapacity: ringCapacity)
        self.realtimePriority = realtimePriority
        self.retryDelays = retryDelays
        self.stallTimeout = stallTimeout
        self.opener = opener
    }

    var state: AudioSourceState { status.withLock { $0.state } }
    var parameters: AlsaCaptureParameters? { status.withLock { $0.parameters } }
    var sampleRate: Int? { status.withLock { $0.sampleRate } }
    var scheduling: RealtimeScheduling? { status.withLock { $0.scheduling } }

    var statistics: AudioSourceStatistics {
        let xruns = counters.xruns.load(ordering: .relaxed)
        return AudioSourceStatistics(
            framesCaptured: counters.framesCaptured.load(ordering: .relaxed),
            xruns: xruns,
            droppedSamples: ring.droppedSamples,
            reopenAttempts: reopenAttempts.load(ordering: .relaxed),
            gaps: xruns + ring.overflowCount + reopenGaps.load(ordering: .relaxed))
    }

    func start() {
        // Under the lock, so that a concurrent `stop()` either comes first (and the thread is
        // never made) or finds the thread to join.
        status.withLock { s in
            guard case .idle = s.state else { return }
            s.state = .starting
            do throws(EarshotError) {
                s.thread = try CaptureThread.start(name: "earshot-capture", realtimePriority: realtimePriority) { scheduling in
                    self.run(scheduling)
                }
            } catch {
                s.state = .failed(error)
            }
        }
        dataSignal.notify()
    }

    func stop() {
        counters.stopRequested.store(true, ordering: .relaxed)
        stopSignal.notify()
        let thread = status.withLock { s -> NamedThread? in
            let t = s.thread
            s.thread = nil
            return t
        }
        thread?.join()
        status.withLock { $0.state = .stopped }
        dataSignal.notify()
    }

    private var stopRequested: Bool { counters.stopRequested.load(ordering: .relaxed) }

    /// Moves to `state` unless a stop has been asked for (then `stop()` sets `.stopped`).
    private func publish(_ state: AudioSourceState) {
        status.withLock { s in
            if !stopRequested { s.state = state }
        }
        dataSignal.notify()
    }

    /// The thread's body.
    private func run(_ scheduling: RealtimeScheduling) {
        status.withLock { $0.scheduling = scheduling }
        var delay = retryDelays?.lowerBound ?? 0
        var attempts = 0
        var hasRun = false
        while !stopRequested {
            if attempts > 0 {
                reopenAttempts.add(1, ordering: .relaxed)
                publish(.retrying)
            }
            attempts += 1
            let failure: EarshotError
            do {
                let input = try opener(configuration, sampleRate)
                let parameters = input.parameters
                status.withLock { s in
                    s.parameters = parameters
                    if s.sampleRate == nil { s.sampleRate = parameters.sampleRate }
                }
                if hasRun { reopenGaps.add(1, ordering: .relaxed) }
                hasRun = true
                delay = retryDelays?.lowerBound ?? 0
                publish(.running)
                let loop = CaptureLoop(input: input, stallTimeout: stallTimeout)
                let end = loop.run(into: ring, counters: counters, signal: dataSignal)
                guard let error = Self.error(for: end, device: configuration.device) else { break }
                failure = error
            } catch {
                failure = error
            }
            if stopRequested { break }
            publish(.failed(failure))
            guard let retryDelays else { return }
            _ = stopSignal.wait(timeout: delay) { stopRequested }
            delay = min(delay * 2, retryDelays.upperBound)
        }
    }

    /// The message for a capture loop that ended on its own; nil for a requested stop.
    private static func error(for end: CaptureLoopEnd, device: String) -> EarshotError? {
        let name = "ALSA device \"\(device)\""
        switch end {
        case .stopRequested:
            return nil
        case .failed(let code, let recovering):
            let text = AlsaLibrary.errorText(code)
            if recovering {
                return .internalError("\(name): capture overran and could not be restarted: \(text)")
            }
            let hint =
                switch -code {
                case ENODEV, ENXIO, ESHUTDOWN: "; it was unplugged or its driver went away"
                case EIO, EBADFD: "; the device or its driver failed"
                default: ""
                }
            return .internalError("\(name): capture stopped: \(text)\(hint)")
        case .stalled(let seconds):
            let shown = (seconds * 10).rounded() / 10
            return .internalError("\(name): no audio for \(shown) s; the device stopped delivering")
        }
    }
}
