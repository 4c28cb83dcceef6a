import EarshotCore
import EarshotLive
import Testing

struct SessionTests {
    let fixture = LiveFixture.shared

    /// Feeds `samples` (16-bit stereo, 44.1 kHz) in 20 ms buffers with audio-clock times.
    private func stream(_ samples: [Int16], into session: Session, startTime: Double = 1000, skipBufferAt: Int? = nil) throws {
        let frames = 882
        var time = startTime
        var k = 0
        for at in stride(from: 0, to: samples.count / 2, by: frames) {
            let n = min(frames, samples.count / 2 - at)
            let buffer = try PCMBuffer(int16: Array(samples[(2 * at)..<(2 * (at + n))]), sampleRate: 44_100, channelCount: 2)
            if k != skipBufferAt { session.matchStreamingBuffer(buffer, at: time) }
            time += Double(n) / 44_100
            k += 1
        }
        session.finish()
    }

    private func collect(_ session: Session) async -> [StreamingResult] {
        var all: [StreamingResult] = []
        for await r in session.results { all.append(r) }
        return all
    }

    @Test func streamedProgrammeMatchesAndFollowsPlayback() async throws {
        let session = Session(catalog: fixture.catalog)
        try stream(fixture.stereo44k(reference: 1, start: 20, seconds: 15), into: session)
        let results = await collect(session)
        let matches = results.compactMap { r -> (StreamingResult, MatchedMediaItem)? in
            r.result.mediaItems.first.map { (r, $0) }
        }
        let (first, item) = try #require(matches.first)
        #expect(item.mediaItem.id == "ref1")
        #expect(!first.isRepeat)
        // The first attempt comes once the minimum query duration (1 s here) has been heard.
        #expect(first.streamTime < 2.5)
        // Every match places "now" where the programme is: 20 s + stream time.
        for (r, m) in matches {
            #expect(abs(m.predictedCurrentMatchOffset - (20 + r.streamTime)) < 0.06)
        }
        #expect(matches.count >= 10)
        #expect(matches.dropFirst().allSatisfy { $0.0.isRepeat })
    }

    @Test func gapInTimesDeliversAudioDiscontinuityAndRestarts() async throws {
        let session = Session(catalog: fixture.catalog)
        try stream(fixture.stereo44k(reference: 0, start: 30, seconds: 8), into: session, skipBufferAt: 200)
        let results = await collect(session)
        let errors = results.compactMap { r -> EarshotError? in
            if case .error(let e) = r.result { return e }
            return nil
        }
        #expect(errors.count == 1)
        if case .audioDiscontinuity(let message) = errors.first {
            #expect(message.contains("gap of 0.020 s"))
        } else {
            Issue.record("expected audioDiscontinuity, got \(errors)")
        }
        // Matching carries on after the gap, from a fresh window.
        #expect(results.last?.result.mediaItems.first?.mediaItem.id == "ref0")
    }

    @Test func changedFormatMidStreamIsRejected() async throws {
        let session = Session(catalog: fixture.catalog)
        session.matchStreamingBuffer(try PCMBuffer(int16: [Int16](repeating: 0, count: 1600), sampleRate: 16_000))
        session.matchStreamingBuffer(try PCMBuffer(float32: [Float](repeating: 0, count: 4800), sampleRate: 48_000))
        session.finish()
        let results = await collect(session)
        guard case .error(.invalidAudioFormat(let message)) = results.first?.result else {
            Issue.record("expected invalidAudioFormat, got \(results.map(\.result))")
            return
        }
        #expect(message.contains("differs"))
    }
}
