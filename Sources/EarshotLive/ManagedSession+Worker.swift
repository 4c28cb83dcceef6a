import Dispatch
import EarshotAudio
import EarshotCore
import FoundationEssentials
import Synchronization

extension ManagedSession {
    /// Everything the session thread owns. Only that thread touches it (hence unchecked Sendable);
    /// callers reach it through commands.
    final class Worker: @unchecked Sendable {
        /// How often the source is polled while capturing; commands wake the thread at once.
        static let pollInterval = 0.010
        /// Samples moved from the source per read (about 64 ms at 16 kHz, 21 ms at 48 kHz).
        static let readBlock = 1024

        let finished = Atomic<Bool>(false)
        private let matcher: CatalogSetMatcher
        private let windowSeconds: Double
        private let stallTimeout: Double
        /// The problem a source that runs yet delivers nothing shows (made once: it is checked
        /// on every turn of a stalled source).
        private let stallProblem: String
        private var machine: ManagedSessionMachine
        private let makeSource: SourceFactory
        private var source: (any AudioSource)?
        private var fingerprinter: PrerecordingWindow?
        /// The capture problem last reported to the machine for this source, until audio flows:
        /// a source that stays down is reported once per reason, not once per turn or retry.
        private var reportedProblem: String?
        /// Since when a running source has delivered nothing: its last audio, or when it was
        /// started or last seen failed (a device just reopened has not had time to deliver).
        private var quietSince = ContinuousClock.now
        private var tracker = MatchTracker()
        /// Sees seeks in the newest audio while following; its tail must be a query the catalogs take.
        private var jumps = JumpDetector()
        /// What the last attempt's tail said of the item followed.
        private var lastAttemptTail = TailVerdict.agrees
        /// The source's count of restarts (a file looped or replaced) last seen, the times the
        /// audio started over, and the stream time of the last; and whether no attempt has
        /// matched since (its answer is then a jump, whatever the tails say).
        private var sourceRestarts = 0
        private var restarts = 0
        private var lastRestart: Double?
        private var restartUnanswered = false
        /// Tails in a row that did not hold the item followed: one is noise (a loud remark, a
        /// quiet bar under room noise); two in a row mean the window's answer rests on old audio.
        private var unsupportedTails = 0
        static let staleAfterTails = 2
        private var waiting: [(id: Int, continuation: CheckedContinuation<MatchResult, Never>)] = []
        private var resultObservers: [Int: AsyncStream<StreamingResult>.Continuation] = [:]
        private let block: UnsafeMutableBufferPointer<Float>
        /// Wall-clock moment of the newest audio read, and the stream time it brought.
        private var lastRead: (instant: ContinuousClock.Instant, streamTime: Double)?
        /// When stream time 0 was heard, as the reads least delayed tell it: a read can come late
        /// (the thread was busy, the system loaded) but never early, so the earliest
        /// `read instant − stream time` is the truth, allowed to creep forward slowly to follow a
        /// sound card whose clock runs a little slow. Cue timing maps stream time to the clock
        /// through it.
        private var streamOrigin: (instant: ContinuousClock.Instant, updated: ContinuousClock.Instant)?
        /// How fast the origin may creep forward: 500 ppm covers sound-card clocks.
        static let originCreep = 0.0005
        /// Set when the thread starts.
        private var channel: Channel?
        /// The last turn stopped reading at its limit with audio left.
        private var backlog = false
        /// Bumped whenever the window changes (audio read, window restarted or dropped).
        private var audioVersion = 0
        /// The last attempt's answer and the `audioVersion` it saw: an attempt before the window
        /// changes would compute the same answer, so a burst of requests costs one match.
        private var lastAttempt: (audioVersion: Int, window: Double, result: MatchResult)?
        private var matchesComputed = 0

        init(catalogs: CatalogSet, configuration: ManagedSessionMachine.Configuration, stallTimeout: Double,
             makeSource: @escaping SourceFactory) {
            matcher = CatalogSetMatcher(catalogs)
            windowSeconds = configuration.maximumWindow
            self.stallTimeout = stallTimeout
            stallProblem = "the audio source delivered no audio for \(Self.format(stallTimeout)) s"
            machine = ManagedSessionMachine(configuration: configuration)
            self.makeSource = makeSource
            block = .allocate(capacity: Self.readBlock)
            block.initialize(repeating: 0)
        }

        deinit { block.deallocate() }

        func run(channel: Channel) {
            self.channel = channel
            let wake = channel.wake
            var running = true
            while running {
                if backlog {
                    backlog = false  // audio is waiting: go straight on
                } else if source != nil {
                    _ = wake.wait(timeout: .now() + Self.pollInterval)
                } else {
                    wake.wait()
                }
                if channel.pending.load(ordering: .acquiring) > 0 {
                    let commands = channel.shared.withLock { s -> [Command] in
                        defer { s.commands.removeAll(keepingCapacity: true) }
                        return s.commands
                    }
                    channel.pending.subtract(commands.count, ordering: .relaxed)
                    for command in commands where running {
                        running = handle(command)
                    }
                }
                if running, source != nil { pumpAudio() }
                publishStatus(channel)
            }
            source?.stop()
            source = nil
            for w in waiting { w.continuation.resume(returning: .error(.matchAttemptFailed("the session was shut down"))) }
            waiting.removeAll()
            for o in resultObservers.values { o.finish() }
            resultObservers.removeAll()
            let observers = channel.shared.withLock { s in
                s.status.state = .idle
                defer { s.statusObservers.removeAll() }
                return Array(s.statusObservers.values)
            }
            // Outside the lock: finishing runs the stream's onTermination, which takes it.
            for o in observers { o.finish() }
            finished.store(true, ordering: .releasing)
        }

        // MARK: Commands

        /// Returns false for shutdown.
        private func handle(_ command: Command) -> Bool {
            let window = usableWindow
            let now = fingerprinter?.streamDuration ?? 0
            switch command {
            case .prepare:
                perform(machine.prepare())
            case .result(let id, let continuation):
                waiting.append((id, continuation))
                perform(machine.requestResult(window: window, streamTime: now))
            case .withdrawResult(let id):
                // Not waiting any more: answered before the withdrawal arrived.
                guard let index = waiting.firstIndex(where: { $0.id == id }) else { break }
                waiting.remove(at: index).continuation.resume(returning: ManagedSession.withdrawn)
                perform(machine.withdrawRequest())
            case .startResults(let id, let continuation):
                resultObservers[id] = continuation
                if resultObservers.count == 1 {
                    tracker.reset()
                    perform(machine.startResults(window: window, streamTime: now))
                } else if let current = tracker.currentMatch {
                    // A late subscriber learns what is playing without waiting for the next change.
                    continuation.yield(StreamingResult(result: .match([current.item]), isRepeat: false,
                                                       streamTime: current.streamTime))
                }
            case .stopResults(let id):
                guard resultObservers.removeValue(forKey: id) != nil else { break }
                if resultObservers.isEmpty { perform(machine.stopResults()) }
            case .setCatalogs(let catalogs):
                matcher.use(catalogs)
                if let minimum = catalogs.minimumQueryDuration { machine.setMinimumWindow(minimum) }
                lastAttempt = nil  // the same audio may match differently now
            case .cancel:
                perform(machine.cancel())
            case .shutdown:
                perform(machine.cancel())
                return false
            }
            return true
        }

        // MARK: Effects

        private func perform(_ effects: [ManagedSessionMachine.Effect]) {
            var endResults = false
            for effect in effects {
                switch effect {
                case .startCapture:
                    let s = makeSource()
                    source = s
                    sourceRestarts = 0
                    restartUnanswered = false
                    fingerprinter = nil
                    jumps.reset()
                    audioVersion += 1
                    reportedProblem = nil
                    quietSince = .now
                    lastRead = nil
                    streamOrigin = nil
                    s.start()
                case .stopCapture:
                    source?.stop()
                    source = nil
                    fingerprinter = nil
                    audioVersion += 1
                case .discardWindow:
                    fingerprinter = nil
                    jumps.reset()
                    audioVersion += 1
                    lastRead = nil
                    streamOrigin = nil
                    tracker.reset()
                case .attemptMatch:
                    attempt()
                case .answerWaiting(let result):
                    if case .match(let items) = result, let top = items.first, resultObservers.isEmpty {
                        // Keep the answer as the current item for status readers.
                        tracker.reset()
                        _ = tracker.track(.match([top]), streamTime: fingerprinter?.streamDuration ?? 0)
                    }
                    // The status shows the answer before the caller gets it.
                    if let channel { publishStatus(channel) }
                    for w in waiting { w.continuation.resume(returning: result) }
                    waiting.removeAll()
                case .publish(let result):
                    let time = fingerprinter?.streamDuration ?? 0
                    if var delivered = tracker.track(result, streamTime: time, revealsJump: lastAttemptTail == .jumped) {
                        delivered.isStale = lastAttemptTail == .stale
                        for o in resultObservers.values { o.yield(delivered) }
                    }
                case .finishResults:
                    endResults = true
                }
            }
            // After the batch (a cancel also stops capture), and with the status published first:
            // whoever sees the results end reads the session as it now is.
            if endResults {
                if let channel { publishStatus(channel) }
                for o in resultObservers.values { o.finish() }
                resultObservers.removeAll()
            }
        }

        private func attempt() {
            guard let fingerprinter else {
                perform(machine.attempted(.error(.matchAttemptFailed("no audio has been heard yet")), window: 0))
                return
            }
            if let last = lastAttempt, last.audioVersion == audioVersion {
                perform(machine.attempted(last.result, window: last.window))
                return
            }
            var result: MatchResult
            let now = fingerprinter.streamDuration
            var window = jumps.window(available: fingerprinter.window.windowDuration, streamTime: now)
            lastAttemptTail = .agrees
            do {
                let (signature, _) = try fingerprinter.window.signature(lastSeconds: window)
                window = signature.duration
                (result, lastAttemptTail) = following(matcher.match(signature), signature: signature, now: now)
                // The first match after the audio started over is where it went, not a chance.
                if restartUnanswered, case .match = result {
                    restartUnanswered = false
                    lastAttemptTail = .jumped
                    unsupportedTails = 0
                }
                if lastAttemptTail == .jumped, let since = jumps.since { window = now - since }
            } catch .signatureInvalid {
                result = .noMatch  // silence in the room: nothing to match yet
            } catch {
                result = .error(error)
            }
            lastAttempt = (audioVersion, window, result)
            matchesComputed += 1
            perform(machine.attempted(result, window: window))
        }

        /// What the newest seconds, matched alone, say of the item followed.
        enum TailVerdict {
            /// They hold it where it is predicted (or there was no tail to check).
            case agrees
            /// They do not hold it: the window's answer rests on older audio.
            case stale
            /// They hold something else, confidently: playback jumped.
            case jumped
        }

        /// While following an item: the window's answer, kept at the followed position when the
        /// window supports it too (a repeat of the same music must not move the programme); then
        /// the newest seconds matched alone, whose answer wins when it shows playback jumped, and
        /// which mark the window's answer stale when they do not hold the followed position.
        private func following(_ result: MatchResult, signature: Signature, now: Double) -> (MatchResult, TailVerdict) {
            guard machine.streaming, let fingerprinter, let (item, at) = tracker.currentMatch else { return (result, .agrees) }
            let expected = MatchTracker.predictedOffset(of: item, from: at, to: now)
            var result = result
            let tolerance = tracker.positionTolerance
            func isFollowed(_ m: MatchedMediaItem) -> Bool { JumpDetector.agrees(m, with: item, at: expected, tolerance: tolerance) }
            // A repeat: the result lists the followed position among the positions that score
            // alike, or the window still supports it.
            if !(result.mediaItems.first.map(isFollowed) ?? false),
               let kept = result.mediaItems.first(where: isFollowed)
                   ?? matcher.support(signature, following: item, expectedOffset: expected) {
                result = .match([kept] + result.mediaItems.filter { !$0.hasSameReference(as: item) })
            }
            for length in jumps.tails(forWindow: signature.duration, minimumQuery: machine.configuration.minimumWindow) {
                guard let (tail, _) = try? fingerprinter.window.signature(lastSeconds: length) else { continue }  // silent
                let tailResult = matcher.match(tail)
                // A few aligned anchors at the expected position are enough to hold it: a noisy tail
                // may match a repeat of the music better than where it really is.
                if tailResult.mediaItems.contains(where: isFollowed)
                    || matcher.support(tail, following: item, expectedOffset: expected, minimumInliers: JumpDetector.supportInliers) != nil {
                    unsupportedTails = 0
                    return (result, .agrees)
                }
                if let revealed = jumps.judge(tail: tailResult, tailLength: length, following: item, expectedOffset: expected,
                                              streamTime: now) {
                    return (revealed, .jumped)
                }
            }
            unsupportedTails += 1
            return (result, unsupportedTails >= Self.staleAfterTails ? .stale : .agrees)
        }

        /// Seconds of the window worth matching now: after a jump or a restart, only what followed.
        private var usableWindow: Double {
            guard let fingerprinter else { return 0 }
            return jumps.usable(available: fingerprinter.window.windowDuration, streamTime: fingerprinter.streamDuration)
        }

        // MARK: Audio

        private func pumpAudio() {
            guard let source else { return }
            // Read whatever the state: a source without a thread (a paced file) retries inside
            // its reads. What a failed source still holds was captured before it failed: stale.
            let got = Self.isDown(source.state) ? discardLeftovers(source) : drain(source)
            switch source.state {
            case .failed(let error):
                quietSince = .now
                report(error.message)
            case .retrying:
                quietSince = .now  // while a device reopens, the failure that led here stays the problem
            case .stopped:
                break
            case .finished:
                // A file source that ran out: its last window still answers, until someone needs
                // more audio than it has, or that window is older than a window is long. Not
                // before everything it delivered is read (a turn takes about a second of it).
                let windowAge = lastRead.map { Self.seconds(since: $0.instant) } ?? 0
                if got == 0, machine.waitingRequests > 0 || machine.streaming || windowAge > windowSeconds {
                    report("the audio source ended")
                }
            case .idle, .starting, .running:
                // A source that says it runs yet delivers nothing is down all the same.
                if got == 0, Self.seconds(since: quietSince) > stallTimeout {
                    report(stallProblem)
                }
            }
        }

        /// Tells the machine that capture does not deliver, once per reason.
        private func report(_ problem: String) {
            guard problem != reportedProblem else { return }
            reportedProblem = problem
            perform(machine.captureFailed(problem))
        }

        /// Reads and drops what a failed source still holds; returns 0 (none of it is new audio).
        /// It stops when the source is up again, whose audio is new.
        private func discardLeftovers(_ source: any AudioSource) -> Int {
            while Self.isDown(source.state), source.read(into: block) > 0 {}
            return 0
        }

        private static func isDown(_ state: AudioSourceState) -> Bool {
            switch state {
            case .failed, .retrying: true
            default: false
            }
        }

        /// Moves what the source has ready into the window; returns how many samples that was.
        @discardableResult
        private func drain(_ source: any AudioSource) -> Int {
            // At most about a second per turn: a source faster than real time (a file, ALSA's
            // file PCM) must not keep the thread from its commands.
            var got = 0
            let limit = Int(source.sampleRate ?? 48_000)
            while got < limit {
                let n = source.read(into: block)
                if n == 0 { break }
                if fingerprinter == nil {
                    // First audio, or audio again after a capture problem: a fresh window.
                    guard let rate = source.sampleRate,
                          let fresh = try? PrerecordingWindow(inputRate: rate, windowSeconds: windowSeconds) else { break }
                    fingerprinter = fresh
                    jumps.reset()
                    audioVersion += 1
                }
                fingerprinter?.appendMono(UnsafeBufferPointer(rebasing: block[..<n]))
                got += n
            }
            backlog = got >= limit
            guard got > 0, let fingerprinter else { return 0 }
            let sourceRestarts = source.statistics.restarts
            if sourceRestarts != self.sourceRestarts {
                // Somewhere in what was just read (a turn of a real-time source: tens of
                // milliseconds) the audio started over: match only what follows this turn.
                self.sourceRestarts = sourceRestarts
                jumps.audioStartedOver(at: fingerprinter.streamDuration)
                restarts += 1
                lastRestart = fingerprinter.streamDuration
                restartUnanswered = true
            }
            audioVersion += 1
            quietSince = .now
            reportedProblem = nil
            lastRead = (quietSince, fingerprinter.streamDuration)
            noteStreamOrigin(read: quietSince, streamTime: fingerprinter.streamDuration)
            perform(machine.audioArrived(window: usableWindow, streamTime: fingerprinter.streamDuration))
            return got
        }

        private func noteStreamOrigin(read instant: ContinuousClock.Instant, streamTime: Double) {
            let candidate = instant - .seconds(streamTime)
            if let (origin, updated) = streamOrigin {
                streamOrigin = (min(origin + (instant - updated) * Self.originCreep, candidate), instant)
            } else {
                streamOrigin = (candidate, instant)
            }
        }

        private static func seconds(since instant: ContinuousClock.Instant) -> Double {
            ManagedSession.seconds(since: instant)
        }

        /// "5" or "0.3": seconds as people write them.
        private static func format(_ seconds: Double) -> String {
            seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
        }

        // MARK: Status

        private func publishStatus(_ channel: Channel) {
            let window = fingerprinter?.window.windowDuration ?? 0
            let heard = fingerprinter?.streamDuration ?? 0
            var current: MatchedMediaItem?
            var instant: ContinuousClock.Instant?
            if let (item, at) = tracker.currentMatch {
                var moved = item
                // Bring the offset to the newest audio read; readers move it on by wall clock,
                // while audio flows (see `ManagedSession.status`).
                if let lastRead {
                    moved.predictedCurrentMatchOffset = MatchTracker.predictedOffset(of: item, from: at, to: lastRead.streamTime)
                    if machine.captureProblem == nil { instant = lastRead.instant }
                }
                current = moved
            }
            let status = Status(state: machine.state, captureProblem: machine.captureProblem, window: window, heard: heard,
                                currentMatch: current, sourceStatistics: source?.statistics ?? .init(),
                                matchesComputed: matchesComputed,
                                newestAudio: lastRead.map { read in
                                    (streamOrigin.map { $0.instant + .seconds(read.streamTime) } ?? read.instant, read.streamTime)
                                }, restarts: restarts, lastRestart: lastRestart)
            let observers = channel.shared.withLock { s -> [AsyncStream<Status>.Continuation] in
                let changed = s.status.state != status.state || s.status.captureProblem != status.captureProblem
                    || s.status.restarts != status.restarts
                s.status = status
                s.currentMatchInstant = instant
                return changed ? Array(s.statusObservers.values) : []
            }
            // Outside the lock: a yield may resume a task while a cancel of that task holds the
            // task's own lock and runs the stream's onTermination, which takes this one.
            for o in observers { o.yield(status) }
        }
    }
}
