import Testing

@testable import EarshotCore

/// Every transition of the managed-session rules, without audio or threads.
struct ManagedSessionMachineTests {
    typealias Machine = ManagedSessionMachine
    let config = Machine.Configuration(minimumWindow: 3, maximumWindow: 12, attemptInterval: 1)
    let match = MatchResult.match([MatchedMediaItem(
        mediaItem: MediaItem(id: "a"), matchOffset: 1, predictedCurrentMatchOffset: 13, frequencySkew: 0,
        timeSkew: 0, confidence: 0.9, referenceIndex: 0)])

    private func names(_ effects: [Machine.Effect]) -> [String] { effects.map(\.description) }

    @Test func prepareStartsPrerecordingOnce() {
        var m = Machine(configuration: config)
        #expect(m.state == .idle)
        #expect(names(m.prepare()) == ["startCapture"])
        #expect(m.state == .prerecording && m.capturing)
        #expect(names(m.prepare()).isEmpty)
        #expect(names(m.audioArrived(window: 5, streamTime: 5)).isEmpty)  // nobody asked yet
    }

    @Test func resultFromAPreparedWindowAttemptsAtOnceThenGoesIdle() {
        var m = Machine(configuration: config)
        _ = m.prepare()
        #expect(names(m.requestResult(window: 4, streamTime: 4)) == ["attemptMatch"])
        #expect(m.state == .matching)
        #expect(names(m.attempted(match, window: 4)) == ["answerWaiting(match)", "stopCapture"])
        #expect(m.state == .idle && !m.capturing)
    }

    @Test func withdrawingTheLastRequestEndsMatching() {
        var m = Machine(configuration: config)
        _ = m.requestResult(window: 0, streamTime: 0)
        _ = m.requestResult(window: 0, streamTime: 0)
        #expect(names(m.withdrawRequest()).isEmpty, "another request still waits")
        #expect(m.state == .matching && m.waitingRequests == 1)
        #expect(names(m.withdrawRequest()) == ["stopCapture"])
        #expect(m.state == .idle && !m.capturing)
        #expect(names(m.withdrawRequest()).isEmpty, "nothing left to withdraw")

        // A prepared session that stays prepared goes back to prerecording, still capturing.
        var p = Machine(configuration: .init(minimumWindow: 3, maximumWindow: 12, attemptInterval: 1, staysPrepared: true))
        _ = p.prepare()
        _ = p.requestResult(window: 1, streamTime: 1)
        #expect(names(p.withdrawRequest()).isEmpty)
        #expect(p.state == .prerecording && p.capturing)
    }

    @Test func prepareWhileMatchingIsIgnored() {
        var m = Machine(configuration: config)
        _ = m.requestResult(window: 0, streamTime: 0)
        #expect(names(m.prepare()).isEmpty)
        #expect(m.state == .matching)
    }

    @Test func resultWithoutPrepareListensUntilTheWindowIsFull() {
        var m = Machine(configuration: config)
        #expect(names(m.requestResult(window: 0, streamTime: 0)) == ["startCapture"])
        #expect(m.state == .matching)
        #expect(names(m.audioArrived(window: 2, streamTime: 2)).isEmpty)  // below the minimum
        #expect(names(m.audioArrived(window: 3, streamTime: 3)) == ["attemptMatch"])
        #expect(names(m.audioArrived(window: 3.5, streamTime: 3.5)).isEmpty)  // one attempt at a time
        #expect(names(m.attempted(.noMatch, window: 3)).isEmpty)  // keep listening
        #expect(names(m.audioArrived(window: 3.5, streamTime: 3.5)).isEmpty)  // not a second later yet
        var t = 4.0
        while t < 12 {
            #expect(names(m.audioArrived(window: t, streamTime: t)) == ["attemptMatch"])
            #expect(names(m.attempted(.noMatch, window: t)).isEmpty)
            t += 1
        }
        #expect(names(m.audioArrived(window: 12, streamTime: 12)) == ["attemptMatch"])
        #expect(names(m.attempted(.noMatch, window: 12)) == ["answerWaiting(noMatch)", "stopCapture"])
        #expect(m.state == .idle)
    }

    @Test func concurrentRequestsShareOneAnswer() {
        var m = Machine(configuration: config)
        _ = m.prepare()
        _ = m.requestResult(window: 5, streamTime: 5)
        #expect(names(m.requestResult(window: 5, streamTime: 5)).isEmpty)  // attempt already running
        #expect(m.waitingRequests == 2)
        #expect(names(m.attempted(match, window: 5)).first == "answerWaiting(match)")
        #expect(m.waitingRequests == 0)
    }

    @Test func cancelWhilePrerecordingStopsCapture() {
        var m = Machine(configuration: config)
        _ = m.prepare()
        #expect(names(m.cancel()) == ["stopCapture"])
        #expect(m.state == .idle && !m.capturing)
    }

    @Test func cancelWhileMatchingAnswersWaitingAndLateAttemptIsIgnored() {
        var m = Machine(configuration: config)
        _ = m.prepare()
        _ = m.requestResult(window: 5, streamTime: 5)
        #expect(names(m.cancel()) == ["answerWaiting(error(matchAttemptFailed))", "stopCapture"])
        #expect(m.state == .idle)
        #expect(names(m.attempted(match, window: 5)).isEmpty)
        #expect(!m.attemptInFlight)
    }

    @Test func resultsKeepMatchingUntilCancelled() {
        var m = Machine(configuration: config)
        #expect(names(m.startResults(window: 0, streamTime: 0)) == ["startCapture"])
        #expect(names(m.audioArrived(window: 3, streamTime: 3)) == ["attemptMatch"])
        #expect(names(m.attempted(match, window: 3)) == ["publish(match)"])
        #expect(m.state == .matching)
        #expect(names(m.audioArrived(window: 4, streamTime: 4)) == ["attemptMatch"])
        #expect(names(m.attempted(.noMatch, window: 4)) == ["publish(noMatch)"])
        #expect(names(m.cancel()) == ["finishResults", "stopCapture"])
        #expect(m.state == .idle)
    }

    @Test func endingResultsGoesIdle() {
        var m = Machine(configuration: config)
        _ = m.startResults(window: 0, streamTime: 0)
        #expect(names(m.stopResults()) == ["stopCapture"])
        #expect(m.state == .idle)
        #expect(names(m.stopResults()).isEmpty)
    }

    @Test func resultDuringResultsIsAnsweredByTheNextAttempt() {
        var m = Machine(configuration: config)
        _ = m.startResults(window: 5, streamTime: 5)
        _ = m.requestResult(window: 5, streamTime: 5)
        #expect(names(m.attempted(match, window: 5)) == ["publish(match)", "answerWaiting(match)"])
        #expect(m.state == .matching)  // the sequence still runs
    }

    @Test func deviceErrorDuringMatchingAnswersWithTheReason() {
        var m = Machine(configuration: config)
        _ = m.requestResult(window: 0, streamTime: 0)
        let effects = m.captureFailed("device hw:9,0 vanished")
        #expect(names(effects) == ["discardWindow", "answerWaiting(error(matchAttemptFailed))", "stopCapture"])
        if case .answerWaiting(.error(let e)) = effects[1] { #expect(e.message.contains("hw:9,0 vanished")) }
        #expect(m.state == .idle)
    }

    @Test func deviceErrorWhilePrerecordingIsShownAndRequestsFailFast() {
        var m = Machine(configuration: config)
        _ = m.prepare()
        #expect(names(m.captureFailed("no such device")) == ["discardWindow"])
        #expect(m.captureProblem == "no such device")
        #expect(m.state == .prerecording)
        #expect(names(m.requestResult(window: 0, streamTime: 0)) == ["answerWaiting(error(matchAttemptFailed))"])
        #expect(m.state == .prerecording)
        // Audio flows again: the problem clears and requests work.
        _ = m.audioArrived(window: 1, streamTime: 1)
        #expect(m.captureProblem == nil)
        #expect(names(m.requestResult(window: 4, streamTime: 4)) == ["attemptMatch"])
    }

    @Test func deviceErrorDuringResultsIsPublishedAndMatchingGoesOn() {
        var m = Machine(configuration: config)
        _ = m.startResults(window: 0, streamTime: 0)
        #expect(names(m.captureFailed("xrun storm")) == ["discardWindow", "publish(error(matchAttemptFailed))"])
        #expect(m.state == .matching)
    }

    /// The window a request sees during a capture problem is stale: the request is answered with
    /// the problem, nothing is matched, and the problem stays until audio flows again.
    @Test func requestsDuringACaptureProblemNeitherMatchNorClearIt() {
        var m = Machine(configuration: config)
        _ = m.prepare()
        _ = m.audioArrived(window: 12, streamTime: 40)
        _ = m.captureFailed("file gone")
        for _ in 0..<3 {
            #expect(names(m.requestResult(window: 12, streamTime: 40)) == ["answerWaiting(error(matchAttemptFailed))"])
            #expect(m.captureProblem == "file gone")
            #expect(!m.attemptInFlight)
        }
        // Following results: each request is answered and published with the problem; no attempt.
        #expect(names(m.startResults(window: 12, streamTime: 40)) == ["publish(error(matchAttemptFailed))"])
        #expect(names(m.requestResult(window: 12, streamTime: 40))
                == ["answerWaiting(error(matchAttemptFailed))", "publish(error(matchAttemptFailed))"])
        #expect(m.state == .matching && m.captureProblem == "file gone")
        #expect(m.waitingRequests == 0)
        // Audio again: the problem is over and matching resumes on the new window.
        #expect(names(m.audioArrived(window: 3, streamTime: 3)) == ["attemptMatch"])
        #expect(m.captureProblem == nil)
    }

    @Test func aCaptureProblemWhoseReasonChangesIsReportedAgain() {
        var m = Machine(configuration: config)
        _ = m.startResults(window: 0, streamTime: 0)
        #expect(names(m.captureFailed("device unplugged")) == ["discardWindow", "publish(error(matchAttemptFailed))"])
        #expect(names(m.captureFailed("cannot open: no such device")) == ["discardWindow", "publish(error(matchAttemptFailed))"])
        #expect(m.captureProblem == "cannot open: no such device")
    }

    /// The new window after a problem has its own stream time, starting at 0: attempts must not
    /// wait for it to pass the old window's time.
    @Test func matchingResumesOnTheNewWindowAfterAProblem() {
        var m = Machine(configuration: config)
        _ = m.startResults(window: 0, streamTime: 0)
        #expect(names(m.audioArrived(window: 12, streamTime: 500)) == ["attemptMatch"])
        _ = m.attempted(match, window: 12)
        _ = m.captureFailed("stalled")
        #expect(names(m.audioArrived(window: 2, streamTime: 2)).isEmpty)
        #expect(names(m.audioArrived(window: 3, streamTime: 3)) == ["attemptMatch"])
    }

    @Test func attemptErrorIsAnswered() {
        var m = Machine(configuration: config)
        _ = m.requestResult(window: 4, streamTime: 4)
        #expect(names(m.attempted(.error(.signatureInvalid("silence")), window: 4)) == ["answerWaiting(error(signatureInvalid))", "stopCapture"])
    }
}

struct ManagedSessionMachineStaysPreparedTests {
    @Test func preparedApplianceSessionReturnsToPrerecording() {
        var m = ManagedSessionMachine(configuration: .init(minimumWindow: 3, maximumWindow: 12, staysPrepared: true))
        _ = m.prepare()
        _ = m.requestResult(window: 12, streamTime: 40)
        #expect(m.attempted(.noMatch, window: 12).map(\.description) == ["answerWaiting(noMatch)"])
        #expect(m.state == .prerecording && m.capturing)
        // Without prepare() it still goes idle afterwards.
        _ = m.cancel()
        _ = m.requestResult(window: 0, streamTime: 0)
        _ = m.audioArrived(window: 12, streamTime: 12)
        #expect(m.attempted(.noMatch, window: 12).map(\.description) == ["answerWaiting(noMatch)", "stopCapture"])
        #expect(m.state == .idle)
    }
}
