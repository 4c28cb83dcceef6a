/// The rules of a managed session (`SHManagedSession`), as a pure state machine.
///
/// The runtime around it owns capture, the rolling fingerprint, the matcher and the clock; it
/// feeds the machine events and carries out the effects it returns. Keeping the rules here makes
/// every transition testable without audio, threads or timers.
///
/// - `prepare()` starts capture and prerecording; while matching it is ignored, as in ShazamKit.
/// - `result()` answers from the prerecorded window at once when it holds the catalog's minimum
///   query duration; otherwise it keeps listening and retrying until the window reaches the
///   maximum query duration, then answers `.noMatch`. Afterwards the session is idle.
/// - `results` keeps matching until cancelled.
/// - `cancel()` ends every attempt and stops capture.
/// - A capture failure while a request waits answers it with the failure; capture keeps retrying.
/// - A capture problem lasts until new audio arrives, not until someone asks: it discards the
///   prerecorded window (audio from before it is stale, however good it was), requests meanwhile
///   are answered with the problem at once, and nothing is matched until capture works again.
public struct ManagedSessionMachine: Sendable {
    public enum State: String, Sendable, Equatable {
        case idle, prerecording, matching
    }

    /// What the runtime must do after an event, in order.
    public enum Effect: Sendable {
        case startCapture
        case stopCapture
        /// Forget the prerecorded window and the item being followed: they describe audio from
        /// before capture stopped delivering. The next audio starts a new window.
        case discardWindow
        /// Make a signature of the current window and match it, then report `.attempted`.
        case attemptMatch
        /// Answer every waiting `result()` call with this result.
        case answerWaiting(MatchResult)
        /// Give this result to the `results` sequence.
        case publish(MatchResult)
        /// End the `results` sequence.
        case finishResults
    }

    public struct Configuration: Sendable {
        public static let `default` = Configuration(minimumWindow: 3, maximumWindow: 12)

        /// Shortest window worth matching (the catalog's minimum query duration).
        public var minimumWindow: Double
        /// Longest window (the catalog's maximum query duration): when a window this long does not
        /// match, `result()` answers `.noMatch`.
        public var maximumWindow: Double
        /// Audio between two attempts while a request is not yet answered, and between attempts
        /// of the `results` sequence.
        public var attemptInterval: Double
        /// After a single result of a prepared session, go back to prerecording instead of idle.
        /// ShazamKit goes idle; an appliance answering request after request wants the window
        /// kept, so the next answer is as fast as the first.
        public var staysPrepared: Bool

        public init(minimumWindow: Double, maximumWindow: Double, attemptInterval: Double = 1, staysPrepared: Bool = false) {
            self.minimumWindow = minimumWindow
            self.maximumWindow = maximumWindow
            self.attemptInterval = attemptInterval
            self.staysPrepared = staysPrepared
        }
    }

    public private(set) var configuration: Configuration
    public private(set) var state: State = .idle
    /// Whether capture runs (the runtime started it and it was not stopped since).
    public private(set) var capturing = false
    /// Calls to `result()` not answered yet.
    public private(set) var waitingRequests = 0
    /// Whether a `results` sequence is running.
    public private(set) var streaming = false
    /// Why capture is not delivering audio, from the failure until new audio arrives.
    public private(set) var captureProblem: String?
    /// Whether an attempt is running (the runtime owes an `.attempted` event).
    public private(set) var attemptInFlight = false
    /// Whether `prepare()` was called since the session was last idle.
    public private(set) var prepared = false
    /// Stream time of the last attempt's window end.
    private var lastAttemptAt = -Double.infinity

    public init(configuration: Configuration) {
        self.configuration = configuration
    }

    /// The catalogs changed: the shortest window worth matching becomes `minimum` (kept within
    /// the window the session holds). Nothing else changes; the next audio applies it.
    public mutating func setMinimumWindow(_ minimum: Double) {
        configuration.minimumWindow = min(max(minimum, 0), configuration.maximumWindow)
    }

    // MARK: Requests

    public mutating func prepare() -> [Effect] {
        switch state {
        case .matching, .prerecording: return []
        case .idle:
            state = .prerecording
            prepared = true
            return startCaptureIfNeeded()
        }
    }

    /// A `result()` call. `window` is the audio the rolling fingerprint holds now.
    public mutating func requestResult(window: Double, streamTime: Double) -> [Effect] {
        waitingRequests += 1
        return beginMatching(window: window, streamTime: streamTime)
    }

    /// A waiting `result()` call was withdrawn (its caller stopped waiting): when no one else
    /// waits or streams, matching ends as if it had been answered.
    public mutating func withdrawRequest() -> [Effect] {
        guard waitingRequests > 0 else { return [] }
        waitingRequests -= 1
        guard waitingRequests == 0, !streaming, state == .matching else { return [] }
        return endMatching()
    }

    /// The `results` sequence starts.
    public mutating func startResults(window: Double, streamTime: Double) -> [Effect] {
        streaming = true
        return beginMatching(window: window, streamTime: streamTime)
    }

    /// The `results` sequence ended (its consumer stopped iterating).
    public mutating func stopResults() -> [Effect] {
        guard streaming else { return [] }
        streaming = false
        guard waitingRequests == 0, state == .matching else { return [] }
        return endMatching()
    }

    public mutating func cancel() -> [Effect] {
        var effects: [Effect] = []
        if waitingRequests > 0 {
            effects.append(.answerWaiting(.error(.matchAttemptFailed("the match was cancelled"))))
            waitingRequests = 0
        }
        if streaming {
            effects.append(.finishResults)
            streaming = false
        }
        if capturing {
            effects.append(.stopCapture)
            capturing = false
        }
        state = .idle
        prepared = false
        lastAttemptAt = -.infinity
        return effects
    }

    // MARK: Runtime events

    /// New audio reached the rolling fingerprint: capture works (again).
    public mutating func audioArrived(window: Double, streamTime: Double) -> [Effect] {
        captureProblem = nil
        return attemptIfDue(window: window, streamTime: streamTime)
    }

    /// An attempt, if someone waits for one, the window is long enough and the last one is an
    /// interval of audio ago.
    private mutating func attemptIfDue(window: Double, streamTime: Double) -> [Effect] {
        guard state == .matching, captureProblem == nil, !attemptInFlight, window >= configuration.minimumWindow else { return [] }
        // A full window is retried every interval; a growing one as soon as it has grown by one.
        guard streamTime - lastAttemptAt >= configuration.attemptInterval else { return [] }
        attemptInFlight = true
        lastAttemptAt = streamTime
        return [.attemptMatch]
    }

    /// An attempt over a window of `window` seconds ended with `result`.
    public mutating func attempted(_ result: MatchResult, window: Double) -> [Effect] {
        attemptInFlight = false
        guard state == .matching else { return [] }
        var effects: [Effect] = []
        if streaming { effects.append(.publish(result)) }
        if waitingRequests > 0 {
            let windowIsFull = window >= configuration.maximumWindow - 0.05
            switch result {
            case .match, .error:
                effects.append(.answerWaiting(result))
                waitingRequests = 0
            case .noMatch where windowIsFull:
                effects.append(.answerWaiting(.noMatch))
                waitingRequests = 0
            case .noMatch:
                break
            }
        }
        if waitingRequests == 0, !streaming { effects += endMatching() }
        return effects
    }

    /// Capture stopped delivering audio (a device missing, vanished or stalled, a file gone, a
    /// source that ended); the runtime keeps retrying it. Called again when the reason changes.
    public mutating func captureFailed(_ reason: String) -> [Effect] {
        captureProblem = reason
        lastAttemptAt = -.infinity
        var effects: [Effect] = [.discardWindow]
        let failure = MatchResult.error(.matchAttemptFailed("audio capture failed: \(reason)"))
        if waitingRequests > 0 {
            effects.append(.answerWaiting(failure))
            waitingRequests = 0
        }
        if streaming { effects.append(.publish(failure)) }
        if state == .matching, !streaming { effects += endMatching() }
        return effects
    }

    // MARK: Helpers

    private mutating func beginMatching(window: Double, streamTime: Double) -> [Effect] {
        var effects: [Effect] = []
        if let captureProblem, capturing {
            // Capture is down: say so now instead of waiting for audio that is not coming.
            let failure = MatchResult.error(.matchAttemptFailed("audio capture failed: \(captureProblem)"))
            if waitingRequests > 0 {
                effects.append(.answerWaiting(failure))
                waitingRequests = 0
            }
            if streaming { effects.append(.publish(failure)) }
            if !streaming { return effects }
        }
        state = .matching
        effects += startCaptureIfNeeded()
        lastAttemptAt = -.infinity
        effects += attemptIfDue(window: window, streamTime: streamTime)
        return effects
    }

    /// The last request was answered: idle as in ShazamKit, or back to prerecording.
    private mutating func endMatching() -> [Effect] {
        if prepared, configuration.staysPrepared {
            state = .prerecording
            return []
        }
        state = .idle
        prepared = false
        return stopCaptureIfRunning()
    }

    private mutating func startCaptureIfNeeded() -> [Effect] {
        guard !capturing else { return [] }
        capturing = true
        return [.startCapture]
    }

    private mutating func stopCaptureIfRunning() -> [Effect] {
        guard capturing else { return [] }
        capturing = false
        return [.stopCapture]
    }
}

extension ManagedSessionMachine.Effect: CustomStringConvertible {
    public var description: String {
        func describe(_ r: MatchResult) -> String {
            switch r {
            case .match: "match"
            case .noMatch: "noMatch"
            case .error(let e): "error(\(e.name))"
            }
        }
        return switch self {
        case .startCapture: "startCapture"
        case .stopCapture: "stopCapture"
        case .discardWindow: "discardWindow"
        case .attemptMatch: "attemptMatch"
        case .answerWaiting(let r): "answerWaiting(\(describe(r)))"
        case .publish(let r): "publish(\(describe(r)))"
        case .finishResults: "finishResults"
        }
    }
}
