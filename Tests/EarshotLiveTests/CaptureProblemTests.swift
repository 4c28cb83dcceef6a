import EarshotAudio
import EarshotCore
import EarshotLive
import EarshotSync
import EarshotTestSupport
import Foundation
import Testing

/// The message of an error result, nil for a match or no match.
private func errorMessage(_ result: MatchResult) -> String? {
    if case .error(let error) = result { return error.message }
    return nil
}

/// A source that plays `samples` in a loop in real time and can be told to go quiet while it
/// still says it runs: a device whose clock stopped, or any source that fails silently.
private final class HaltingSource: AudioSource, @unchecked Sendable {
    private struct Inner {
        var state = AudioSourceState.idle
        var position = 0
        var owed = 0.0
        var last = ContinuousClock.now
        var halted = false
        var captured = 0
    }
    private let inner = Locked(Inner())
    private let samples: [Float]

    init(samples: [Float]) {
        self.samples = samples
    }

    var halted: Bool {
        get { inner.withLock { $0.halted } }
        set { inner.withLock { $0.halted = newValue } }
    }

    var sampleRate: Double? { 16_000 }
    var state: AudioSourceState { inner.withLock { $0.state } }
    var statistics: AudioSourceStatistics { inner.withLock { AudioSourceStatistics(framesCaptured: $0.captured) } }
    func start() { inner.withLock { $0.state = .running; $0.last = .now } }
    func stop() { inner.withLock { $0.state = .stopped } }
    func waitForSamples(timeout: Double) -> Bool { false }

    func read(into buffer: UnsafeMutableBufferPointer<Float>) -> Int {
        inner.withLock { s in
            let now = ContinuousClock.now
            defer { s.last = now }
            guard s.state == .running, !s.halted else { return 0 }
            let elapsed = (now - s.last).components
            s.owed += (Double(elapsed.seconds) + Double(elapsed.attoseconds) * 1e-18) * 16_000
            let n = min(buffer.count, Int(s.owed))
            for i in 0..<n { buffer[i] = samples[(s.position + i) % samples.count] }
            s.position += n
            s.owed -= Double(n)
            s.captured += n
            return n
        }
    }
}

/// A managed session whose source stops delivering: the problem shows until audio flows again,
/// nothing is matched from the audio heard before it, and the current match stops.
struct CaptureProblemTests {
    let fixture = LiveFixture.shared

    private func excerpt(_ reference: Int, _ start: Double, _ seconds: Double) -> [Float] {
        SyntheticSignature.excerpt(fixture.audio[reference], start: start, duration: seconds)
    }

    @Test func deletedProgrammeFileIsAProblemUntilItIsBack() async throws {
        let scratch = try TemporaryDirectory("earshot-live")
        let directory = scratch.url
        let path = directory.appendingPathComponent("tv.wav").path
        let programme = Data(WAVFile.bytes(excerpt(1, 20, 20)))
        try programme.write(to: URL(fileURLWithPath: path))
        let session = ManagedSession(catalog: fixture.catalog, staysPrepared: true) {
            PacedFileAudioSource(openingAtStart: path, loop: true)
        }
        defer { session.shutdown() }
        session.prepare()
        #expect((await session.result()).mediaItems.first?.mediaItem.id == "ref1")
        #expect(session.status.currentMatch?.mediaItem.id == "ref1")

        try FileManager.default.removeItem(atPath: path)
        try await eventually("the problem shows", { session.status }, until: { $0.captureProblem != nil })
        let status = session.status
        #expect(status.captureProblem == "\(path): no such file (the file does not exist)")
        #expect(status.window == 0, "the window heard before the problem was kept")
        #expect(status.currentMatch == nil)
        for _ in 0..<3 {
            let answer = await session.result()
            #expect(errorMessage(answer) == "audio capture failed: \(path): no such file (the file does not exist)", "\(answer)")
            #expect(session.status.captureProblem != nil, "a request cleared the problem")
        }

        try programme.write(to: URL(fileURLWithPath: path))
        try await eventually("audio flows again", { session.status }, until: { $0.captureProblem == nil })
        #expect(session.status.sourceStatistics.reopenAttempts >= 1)
        #expect((await session.result()).mediaItems.first?.mediaItem.id == "ref1")
    }

    @Test func sourceThatGoesQuietWhileRunningIsAProblemUntilItDeliversAgain() async throws {
        let source = HaltingSource(samples: excerpt(2, 30, 30))
        let session = ManagedSession(catalog: fixture.catalog, staysPrepared: true, stallTimeout: 0.5) { source }
        defer { session.shutdown() }
        session.prepare()
        #expect((await session.result()).mediaItems.first?.mediaItem.id == "ref2")

        source.halted = true
        try await eventually("the stall shows", { session.status }, until: { $0.captureProblem != nil })
        #expect(session.status.captureProblem == "the audio source delivered no audio for 0.5 s")
        #expect(session.status.window == 0 && session.status.currentMatch == nil)
        #expect(errorMessage(await session.result())?.hasSuffix("no audio for 0.5 s") == true)

        source.halted = false
        try await eventually("audio flows again", { session.status }, until: { $0.captureProblem == nil })
        #expect((await session.result()).mediaItems.first?.mediaItem.id == "ref2")
    }

    /// A device that failed and began reopening before the session looked at it: what its ring
    /// still holds was captured before the failure, so it is not heard as new audio.
    @Test func audioLeftInAFailedDevicesRingIsNotNewAudio() async throws {
        let device = DeviceRingSource()
        device.publish(.idle, capturing: excerpt(1, 20, 12))
        let session = ManagedSession(catalog: fixture.catalog, staysPrepared: true) { device }
        defer { session.shutdown() }
        session.prepare()
        try await eventually("all is heard", { session.status }, until: { $0.heard >= 11.99 })
        #expect((await session.result()).mediaItems.first?.mediaItem.id == "ref1")
        let heard = session.status.heard

        device.publish(.retrying, capturing: excerpt(1, 32, 10))
        try await eventually("the ring is read", { session.status }, until: { _ in device.unread == 0 })
        try await Task.sleep(for: .milliseconds(50))  // a few turns, each publishing the status
        #expect(session.status.heard == heard, "audio captured before the failure was heard as new")

        device.publish(.failed(.internalError("no such device")))
        try await eventually("the problem shows", { session.status }, until: { $0.captureProblem != nil })
        #expect(session.status.window == 0 && session.status.currentMatch == nil)

        device.publish(.running, capturing: excerpt(1, 60, 12))
        try await eventually("audio flows again", { session.status }, until: { $0.captureProblem == nil })
        #expect((await session.result()).mediaItems.first?.mediaItem.id == "ref1")
    }

    /// The file ended: the answer stays (it is what was heard), its offset stops moving on.
    @Test func currentMatchStopsWhenTheAudioStops() async throws {
        let session = ManagedSession(catalog: fixture.catalog, staysPrepared: true) { ScriptedAudioSource(samples: self.excerpt(2, 30, 20)) }
        defer { session.shutdown() }
        session.prepare()
        try await eventually("all is heard", { session.status }, until: { $0.heard >= 19.99 })
        let answer = try #require((await session.result()).mediaItems.first)
        #expect(abs(answer.predictedCurrentMatchOffset - 50) < 0.05)
        var previous = session.status.currentMatch?.predictedCurrentMatchOffset ?? -1
        try await eventually("the offset stops", { session.status }, until: { status in
            let offset = status.currentMatch?.predictedCurrentMatchOffset ?? -2
            defer { previous = offset }
            return offset == previous
        })
        let frozen = try #require(session.status.currentMatch?.predictedCurrentMatchOffset)
        #expect(frozen >= answer.predictedCurrentMatchOffset)
        #expect(frozen <= answer.predictedCurrentMatchOffset + ManagedSession.extrapolationLimit + 1e-6)
        try await Task.sleep(for: .milliseconds(100))
        #expect(session.status.currentMatch?.predictedCurrentMatchOffset == frozen)
    }
}
