import Dispatch
import EarshotAudio
import EarshotCore
import EarshotSync
import FoundationEssentials
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A session that owns its audio source and keeps a prerecording buffer (`SHManagedSession`).
///
/// `prepare()` starts the source and fingerprints what it hears into a rolling window of the
/// catalog's maximum query duration, so `result()` answers from audio already heard. The rules
/// (what each call does in each state) are `ManagedSessionMachine`'s; this class runs them.
///
/// One thread, `earshot-session`, owns the source's consumer side, the fingerprint window, the
/// matcher and the machine: nothing they hold is shared, so nothing on the audio path locks.
/// Calls post commands to that thread and wake it; it polls the source every 10 ms.
public final class ManagedSession: Sendable {
    public typealias State = ManagedSessionMachine.State
    /// Makes a fresh source each time capture starts (a stopped source cannot restart).
    public typealias SourceFactory = @Sendable () -> any AudioSource

    /// What the session is doing, as observers see it.
    public struct Status: Sendable {
        public var state: State
        /// Why the source is not delivering audio, from the failure until audio flows again.
        public var captureProblem: String?
        /// Seconds of audio in the prerecording window.
        public var window: Double
        /// Seconds of audio heard since capture started.
        public var heard: Double
        /// The item being followed by a `results` sequence or the last `result()`, with its
        /// `predictedCurrentMatchOffset` moved on to the moment the status was taken while audio
        /// flows. It does not run ahead of the audio: it moves on by the clock at most
        /// `extrapolationLimit` past the newest audio (so it stops when audio stops), and a
        /// capture problem clears it (what was playing before is no longer known).
        public var currentMatch: MatchedMediaItem?
        public var sourceStatistics: AudioSourceStatistics
        /// Times the matcher ran. Requests that come before new audio share the last answer, so
        /// this grows more slowly than the number of requests.
        public var matchesComputed = 0
        /// When the newest audio was heard, and the stream time (`heard`, seconds) it brought:
        /// how stream times of results map onto the clock (a live source delivers in real time).
        /// The instant is that of the least delayed reads, so a session thread that fell behind
        /// does not shift the mapping.
        public var newestAudio: (instant: ContinuousClock.Instant, streamTime: Double)?
        /// Times the source said its audio started over (a file looped or was replaced), and the
        /// stream time of the last: what was followed before it says nothing of what plays after.
        public var restarts = 0
        public var lastRestart: Double?
    }

    private let channel: Channel
    private let worker: Worker

    /// Seconds past the newest audio that a status reader moves the current match on by the
    /// clock: more than the session's turns between reads, little enough that the offset stops
    /// soon after the audio does, before a stall is reported.
    public static let extrapolationLimit = 1.0

    /// A session over `catalog` that captures from sources `source` makes. `staysPrepared`:
    /// see `ManagedSessionMachine.Configuration`. `stallTimeout`: seconds a source that says it
    /// runs may deliver nothing before the session reports a capture problem (sources that
    /// detect their own stalls, such as ALSA devices after 2 s, usually report first).
    public convenience init(catalog: MappedCatalog, staysPrepared: Bool = false, attemptInterval: Double = 1,
                            stallTimeout: Double = 5, source: @escaping SourceFactory) {
        self.init(catalogs: CatalogSet([.init(name: "", version: 0, catalog: catalog)]), staysPrepared: staysPrepared,
                  attemptInterval: attemptInterval, stallTimeout: stallTimeout, source: source)
    }

    /// A session over every catalog of `catalogs` (which `setCatalogs` replaces while it runs).
    /// The prerecording window holds `windowSeconds`, by default the longest query of the
    /// catalogs (or `ManagedSessionMachine.Configuration.default`'s without any); it stays that
    /// long across swaps, so the audio already heard is never lost to one.
    public init(catalogs: CatalogSet, windowSeconds: Double? = nil, staysPrepared: Bool = false, attemptInterval: Double = 1,
                stallTimeout: Double = 5, source: @escaping SourceFactory) {
        let fallback = ManagedSessionMachine.Configuration.default
        let window = windowSeconds ?? catalogs.maximumQueryDuration ?? fallback.maximumWindow
        let configuration = ManagedSessionMachine.Configuration(
            minimumWindow: min(catalogs.minimumQueryDuration ?? fallback.minimumWindow, window), maximumWindow: window,
            attemptInterval: attemptInterval, staysPrepared: staysPrepared)
        let channel = Channel(status: Status(state: .idle, window: 0, heard: 0, sourceStatistics: .init()))
        self.channel = channel
        let worker = Worker(catalogs: catalogs, configuration: configuration, stallTimeout: stallTimeout, makeSource: source)
        self.worker = worker
        do {
            // Runs until `shutdown` (or deinit) posts its command; detached, as `shutdown` waits
            // for the worker rather than the thread.
            _ = try NamedThread(name: "earshot-session", stackSize: 1 << 20) { worker.run(channel: channel) }
        } catch {
            fatalError("\(error)")  // only when the system has no thread left to give
        }
    }

    deinit {
        post(.shutdown)
    }

    // MARK: ShazamKit's surface

    /// Starts capture and prerecording; returns once the request is taken. Ignored while
    /// matching.
    public func prepare() {
        post(.prepare)
    }

    /// One match: from the prerecorded window at once when it holds enough audio, otherwise
    /// after listening, up to the catalog's maximum query duration (then `.noMatch`).
    /// Cancelling the calling task ends the wait at once with `.error(matchAttemptFailed)`; the
    /// session then goes back to prerecording or idle unless another caller still waits.
    public func result() async -> MatchResult {
        let request = ResultRequest(id: channel.nextID())
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                if !channel.post(request, continuation) { continuation.resume(returning: Self.withdrawn) }
            }
        } onCancel: {
            channel.withdraw(request)
        }
    }

    /// What a withdrawn `result()` returns.
    static let withdrawn = MatchResult.error(.matchAttemptFailed("the request was cancelled"))

    /// Matches continuously until the sequence is dropped or `cancel()` is called.
    public func results() -> AsyncStream<StreamingResult> {
        let (stream, continuation) = AsyncStream.makeStream(of: StreamingResult.self, bufferingPolicy: .bufferingNewest(64))
        let id = channel.nextID()
        continuation.onTermination = { [weak self] _ in self?.post(.stopResults(id)) }
        post(.startResults(id, continuation))
        return stream
    }

    /// Matches from now on search `catalogs`. An attempt already running finishes on the
    /// catalogs it started with; the prerecording window is kept.
    public func setCatalogs(_ catalogs: CatalogSet) {
        post(.setCatalogs(catalogs))
    }

    /// Ends every attempt and stops capture.
    public func cancel() {
        post(.cancel)
    }

    // MARK: Observation

    public var state: State { channel.shared.withLock { $0.status.state } }

    /// The current status; `currentMatch`'s predicted offset is moved on to now, while audio flows.
    public var status: Status {
        channel.shared.withLock { s in
            var status = s.status
            if var item = status.currentMatch, let at = s.currentMatchInstant {
                let elapsed = min(Self.seconds(since: at), Self.extrapolationLimit)
                item.predictedCurrentMatchOffset = item.predictedOffset(after: elapsed)
                status.currentMatch = item
            }
            return status
        }
    }

    /// Every change of state or capture problem, and every restart of the audio, starting with
    /// the current status.
    public func statusUpdates() -> AsyncStream<Status> {
        let (stream, continuation) = AsyncStream.makeStream(of: Status.self, bufferingPolicy: .bufferingNewest(16))
        let id = channel.shared.withLock { s -> Int in
            s.nextObserverID += 1
            s.statusObservers[s.nextObserverID] = continuation
            continuation.yield(s.status)
            return s.nextObserverID
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.channel.shared.withLock { $0.statusObservers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Stops capture and the session thread; the session cannot be used afterwards.
    public func shutdown() {
        post(.shutdown)
        while !worker.finished.load(ordering: .acquiring) { usleep(1000) }
    }

    // MARK: Plumbing

    private func post(_ command: Command) {
        channel.post(command)
    }

    static func seconds(since instant: ContinuousClock.Instant) -> Double {
        let d = ContinuousClock.now - instant
        return Double(d.components.seconds) + Double(d.components.attoseconds) * 1e-18
    }
}

extension ManagedSession {
    enum Command: @unchecked Sendable {
        case prepare
        case result(Int, CheckedContinuation<MatchResult, Never>)
        case withdrawResult(Int)
        case startResults(Int, AsyncStream<StreamingResult>.Continuation)
        case stopResults(Int)
        case setCatalogs(CatalogSet)
        case cancel
        case shutdown
    }

    /// How callers and the session thread meet: a command queue with a wake-up, and the status.
    final class Channel: Sendable {
        let shared: Locked<Shared>
        /// Commands queued, so the thread takes the lock only when there are some.
        let pending = Atomic<Int>(0)
        let wake = DispatchSemaphore(value: 0)

        init(status: Status) {
            shared = Locked(Shared(status: status))
        }

        /// A fresh id for a request or an observer.
        func nextID() -> Int {
            shared.withLock { s in
                s.nextObserverID += 1
                return s.nextObserverID
            }
        }

        func post(_ command: Command) {
            shared.withLock { $0.commands.append(command) }
            pending.add(1, ordering: .releasing)
            wake.signal()
        }

        /// Posts `request` unless it was withdrawn first (then returns false). Posting and
        /// withdrawing take the same lock, so the thread always sees a request before its
        /// withdrawal, whichever the caller's task did first.
        func post(_ request: ResultRequest, _ continuation: CheckedContinuation<MatchResult, Never>) -> Bool {
            let posted = shared.withLock { s -> Bool in
                guard !request.withdrawn else { return false }
                request.posted = true
                s.commands.append(.result(request.id, continuation))
                return true
            }
            if posted {
                pending.add(1, ordering: .releasing)
                wake.signal()
            }
            return posted
        }

        /// Withdraws `request`: the thread answers it at once if it still waits.
        func withdraw(_ request: ResultRequest) {
            let post = shared.withLock { s -> Bool in
                request.withdrawn = true
                guard request.posted else { return false }
                s.commands.append(.withdrawResult(request.id))
                return true
            }
            if post {
                pending.add(1, ordering: .releasing)
                wake.signal()
            }
        }
    }

    /// One `result()` call's progress; read and written only under the channel's lock.
    final class ResultRequest: @unchecked Sendable {
        let id: Int
        var posted = false
        var withdrawn = false

        init(id: Int) {
            self.id = id
        }
    }

    /// State shared between callers and the session thread, behind one lock taken briefly.
    struct Shared: Sendable {
        var commands: [Command] = []
        var status: Status
        /// When `status.currentMatch`'s predicted offset was true; nil while it must not move on.
        var currentMatchInstant: ContinuousClock.Instant?
        var statusObservers: [Int: AsyncStream<Status>.Continuation] = [:]
        var nextObserverID = 0
    }
}
