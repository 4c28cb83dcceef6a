import EarshotAudio
import EarshotCore
import EarshotLive
import EarshotTestSupport
import Foundation
import Testing

/// The managed session run for real (its thread, a source, the matcher) on scripted audio.
struct ManagedSessionTests {
    let fixture = LiveFixture.shared

    private func excerpt(_ reference: Int, _ start: Double, _ seconds: Double) -> [Float] {
        SyntheticSignature.excerpt(fixture.audio[reference], start: start, duration: seconds)
    }

    @Test func preparedSessionAnswersFromTheWindowAndGoesIdle() async throws {
        let audio = excerpt(2, 30, 20)
        let session = ManagedSession(catalog: fixture.catalog) { ScriptedAudioSource(samples: audio) }
        defer { session.shutdown() }
        session.prepare()
        // All 20 s heard (the session reads about a second per turn, so this takes a few turns).
        try await eventually("the window holds all the audio", { session.status }, until: { $0.state == .prerecording && $0.heard >= 19.99 })
        let result = await session.result()
        let top = try #require(result.mediaItems.first)
        #expect(top.mediaItem.id == "ref2")
        // The window is the last 12 s of the 20 heard: it starts 38 s into the reference.
        #expect(abs(top.matchOffset - 38) < 0.05)
        #expect(abs(top.predictedCurrentMatchOffset - 50) < 0.05)
        // The status already shows the answer when the caller gets it.
        #expect(session.state == .idle)
        // The answer stays the current item, its offset moving on with the clock.
        let current = try #require(session.status.currentMatch)
        #expect(current.mediaItem.id == "ref2" && current.predictedCurrentMatchOffset >= 50)
    }

    @Test func resultWithoutPrepareListensThenAnswers() async throws {
        let audio = excerpt(0, 10, 6)
        let session = ManagedSession(catalog: fixture.catalog) { ScriptedAudioSource(samples: audio) }
        defer { session.shutdown() }
        #expect(session.state == .idle)
        let result = await session.result()
        #expect(result.mediaItems.first?.mediaItem.id == "ref0")
    }

    /// Cancelling the task that waits in `result()` ends the wait at once; the session, which
    /// nobody else uses, stops listening.
    @Test func cancellingTheWaitingTaskWithdrawsTheRequest() async throws {
        // Real-time audio that is not in the catalog: the request would wait 12 s for a full window.
        let audio = SyntheticMusic.make(seed: 4243, duration: 30)
        let session = ManagedSession(catalog: fixture.catalog) { ScriptedAudioSource(samples: audio, speed: 1) }
        defer { session.shutdown() }
        let waiting = Task { await session.result() }
        try await eventually("the session matches", { session.status }, until: { $0.state == .matching && $0.heard > 0.5 })
        let started = ContinuousClock.now
        waiting.cancel()
        guard case .error(let error) = await waiting.value else {
            Issue.record("a cancelled request was answered with a result")
            return
        }
        #expect(error.message.contains("cancelled"))
        #expect(ContinuousClock.now - started < .seconds(2), "the wait did not end at once")
        try await eventually("the session goes idle", { session.status }, until: { $0.state == .idle })

        // A task cancelled before it asks gets the same answer without touching the session.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await session.result()
        }
        guard case .error = await early.value else {
            Issue.record("an already-cancelled request was answered with a result")
            return
        }
        #expect(session.state == .idle)
    }

    @Test func audioNotInTheCatalogGivesNoMatchOnceTheWindowIsFull() async throws {
        let audio = SyntheticMusic.make(seed: 4242, duration: 14)
        let session = ManagedSession(catalog: fixture.catalog) { ScriptedAudioSource(samples: audio) }
        defer { session.shutdown() }
        session.prepare()
        try await eventually("the window is full", { session.status }, until: { $0.window >= 12 })
        guard case .noMatch = await session.result() else {
            Issue.record("expected noMatch")
            return
        }
    }

    @Test func missingDeviceGivesAClearErrorState() async throws {
        let session = ManagedSession(catalog: fixture.catalog) {
            ScriptedAudioSource(samples: [], failure: .invalidAudioFormat("cannot open capture device \"hw:9,9\": No such device"))
        }
        defer { session.shutdown() }
        session.prepare()
        try await eventually("the problem shows", { session.status }, until: { $0.captureProblem != nil })
        #expect(session.status.captureProblem?.contains("hw:9,9") == true)
        guard case .error(.matchAttemptFailed(let message)) = await session.result() else {
            Issue.record("expected matchAttemptFailed")
            return
        }
        #expect(message.contains("No such device"))
    }

    @Test func cancelWhilePrerecordingStopsEverything() async throws {
        let session = ManagedSession(catalog: fixture.catalog) { ScriptedAudioSource(samples: [Float](repeating: 0.1, count: 16_000)) }
        defer { session.shutdown() }
        session.prepare()
        try await eventually("the session prerecords", { session.status }, until: { $0.state == .prerecording })
        session.cancel()
        try await eventually("the session goes idle with an empty window", { session.status }, until: { $0.state == .idle && $0.window == 0 })
    }

    @Test func resultsFollowTheProgrammeUntilCancelled() async throws {
        let audio = excerpt(1, 5, 30)
        let session = ManagedSession(catalog: fixture.catalog) { ScriptedAudioSource(samples: audio, speed: 20) }
        defer { session.shutdown() }
        var updates = session.statusUpdates().makeAsyncIterator()
        #expect(await updates.next()?.state == .idle)
        var matches: [StreamingResult] = []
        for await r in session.results() {
            if !r.result.mediaItems.isEmpty { matches.append(r) }
            if matches.count == 3 {
                session.cancel()
                break
            }
        }
        #expect(matches.allSatisfy { $0.result.mediaItems.first?.mediaItem.id == "ref1" })
        #expect(!matches[0].isRepeat)
        #expect(matches.dropFirst().allSatisfy { $0.isRepeat })
        #expect(await updates.next()?.state == .matching)
        var state = ManagedSession.State.matching
        while state != .idle, let next = await updates.next() { state = next.state }
        #expect(state == .idle)
    }

    /// A seek while following: the newest seconds show it long before the whole window would,
    /// and later attempts match only the audio after it.
    @Test func aSeekIsSeenFromTheNewestAudio() async throws {
        let audio = excerpt(1, 5, 20) + excerpt(1, 60, 20)  // at stream time 20 s playback jumps 35 s ahead
        let session = ManagedSession(catalog: fixture.catalog) { ScriptedAudioSource(samples: audio) }
        defer { session.shutdown() }
        var afterJump: [StreamingResult] = []
        for await r in session.results() {
            guard let top = r.result.mediaItems.first, r.streamTime > 20 else { continue }
            // Reference position 60 + (t - 20) after the jump, 5 + t before it.
            if abs(top.predictedCurrentMatchOffset - (40 + r.streamTime)) < 0.5 { afterJump.append(r) }
            if afterJump.count == 3 || r.streamTime > 38 { break }
        }
        session.cancel()
        #expect(afterJump.count == 3)
        guard let first = afterJump.first else { return }
        #expect(first.revealsJump)
        #expect(!first.isRepeat)
        // A 12 s window alone would need more than half of it after the jump.
        #expect(first.streamTime - 20 <= 5.01)
        #expect(afterJump.dropFirst().allSatisfy { $0.isRepeat && !$0.revealsJump })
    }

    /// A status observer still iterating when the session shuts down sees its sequence end
    /// (finishing it runs its termination handler, which must not meet the status lock held).
    @Test func shutdownEndsStatusUpdatesBeingIterated() async throws {
        let session = ManagedSession(catalog: fixture.catalog) { ScriptedAudioSource(samples: excerpt(0, 0, 2)) }
        let updates = session.statusUpdates()
        let observer = Task {
            var count = 0
            for await _ in updates { count += 1 }
            return count
        }
        session.prepare()
        try await eventually("the session prerecords", { session.status }, until: { $0.state == .prerecording })
        session.shutdown()
        #expect(await observer.value >= 1)
        #expect(session.state == .idle)
    }

    @Test func stayPreparedSessionAnswersRequestAfterRequest() async throws {
        let audio = excerpt(2, 40, 20)
        let session = ManagedSession(catalog: fixture.catalog, staysPrepared: true) { ScriptedAudioSource(samples: audio) }
        defer { session.shutdown() }
        session.prepare()
        try await eventually("the window is full", { session.status }, until: { $0.window >= 12 })
        for _ in 0..<3 {
            #expect(await session.result().mediaItems.first?.mediaItem.id == "ref2")
            #expect(session.state == .prerecording)
            #expect(session.status.currentMatch?.mediaItem.id == "ref2")
        }
    }

    /// Requests that come before any new audio share one match: the answer could not differ.
    @Test func aBurstOfRequestsOnUnchangedAudioCostsOneMatch() async throws {
        let source = ScriptedAudioSource(samples: excerpt(2, 40, 20))
        let session = ManagedSession(catalog: fixture.catalog, staysPrepared: true) { source }
        defer { session.shutdown() }
        session.prepare()
        try await eventually("all is heard", { session.status }, until: { $0.heard >= 19.99 })
        // The source has ended: the window stays as it is.
        try await eventually("the source ends") { source.state == .finished }
        let first = await session.result()
        #expect(first.mediaItems.first?.mediaItem.id == "ref2")
        let before = session.status.matchesComputed
        let answers = await withTaskGroup(of: MatchResult.self) { group in
            for _ in 0..<20 { group.addTask { await session.result() } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.count == 20)
        for answer in answers {
            #expect(answer.mediaItems.first?.mediaItem.id == "ref2")
            #expect(answer.mediaItems.first?.matchOffset == first.mediaItems.first?.matchOffset)
        }
        #expect(session.status.matchesComputed == before, "the matcher ran again for audio it had already matched")
    }
}
