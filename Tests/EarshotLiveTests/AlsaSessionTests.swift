import EarshotCore
import EarshotLive
import EarshotSync
import EarshotTestSupport
import Foundation
import Testing

@testable import EarshotAudio

/// The whole live path through real ALSA: alsa-lib's `file` PCM reads programme audio from a raw
/// file (no sound card needed), the capture thread puts it in the ring, the session fingerprints
/// and matches it.
struct AlsaSessionTests {
    let fixture = LiveFixture.shared

    @Test func capturedProgrammeMatchesEndToEnd() async throws {
        AlsaTestEnvironment.prepare()
        let scratch = try TemporaryDirectory("earshot-live")
        let directory = scratch.url
        // 10 s of reference 1 from 40 s, as 16-bit stereo at 44.1 kHz: the device is asked for
        // that format, so the session resamples and mixes down as with a USB microphone.
        let raw = try RawPCM.writeS16(fixture.stereo44k(reference: 1, start: 40, seconds: 10),
                                      to: directory.appendingPathComponent("programme.s16").path)
        let configuration = AlsaCaptureConfiguration(device: AlsaTestEnvironment.device(reading: raw),
                                                     sampleRate: 44_100, channelCount: 2)
        // The file PCM is not paced: a ring longer than the programme keeps all of it.
        let session = ManagedSession(catalog: fixture.catalog) {
            AlsaAudioSource(configuration: configuration, bufferDuration: 30, realtimePriority: nil)
        }
        defer { session.shutdown() }
        var first: MatchedMediaItem?
        for await r in session.results() {
            if let item = r.result.mediaItems.first {
                first = item
                session.cancel()
            }
        }
        let item = try #require(first)
        #expect(item.mediaItem.id == "ref1")
        #expect(item.matchOffset >= 39.9 && item.matchOffset < 50)
        #expect(abs(item.frequencySkew) < 0.003)
        #expect(session.status.sourceStatistics.framesCaptured == 0)  // capture stopped with cancel
    }

    @Test func missingDeviceShowsAsCaptureProblem() async throws {
        AlsaTestEnvironment.prepare()
        let session = ManagedSession(catalog: fixture.catalog) {
            AlsaAudioSource(configuration: AlsaCaptureConfiguration(device: "earshot_no_such_pcm"), realtimePriority: nil)
        }
        defer { session.shutdown() }
        session.prepare()
        try await eventually("the problem shows", { session.status }, until: { $0.captureProblem != nil })
        let problem = try #require(session.status.captureProblem)
        #expect(problem.contains("earshot_no_such_pcm"))
        guard case .error(.matchAttemptFailed(let message)) = await session.result() else {
            Issue.record("expected matchAttemptFailed")
            return
        }
        #expect(message.contains("earshot_no_such_pcm"))
    }

    /// A capture device unplugged while it captures (ALSA's file PCM whose infile is deleted, see
    /// `UnpluggableFilePCM`): a capture problem naming the device while it is retried, nothing
    /// matched from what was heard before, and matching again once it is back.
    @Test func unpluggedDeviceIsAProblemUntilItIsBack() async throws {
        AlsaTestEnvironment.prepare()
        let scratch = try TemporaryDirectory("earshot-live")
        let directory = scratch.url
        let infile = directory.appendingPathComponent("programme.s16").path
        let programme = fixture.stereo44k(reference: 1, start: 40, seconds: 10)
        _ = try RawPCM.writeS16(programme, to: infile)
        let device = AlsaTestEnvironment.device(reading: infile)
        let configuration = AlsaCaptureConfiguration(device: device, sampleRate: 44_100, channelCount: 2)
        // Unpaced, as above: a ring longer than the programme. The first pause before a reopen
        // is the daemon's (0.5 s): shorter, a session thread slowed by a loaded machine can miss
        // the failure and see only the reopen failing.
        let session = ManagedSession(catalog: fixture.catalog, staysPrepared: true) {
            AlsaAudioSource(configuration: configuration, bufferDuration: 30, realtimePriority: nil, retryDelays: 0.5...1,
                            stallTimeout: 2) { configuration, rate throws(EarshotError) in
                try UnpluggableFilePCM(configuration: configuration, requiredSampleRate: rate, infile: infile)
            }
        }
        defer { session.shutdown() }
        // Every change of the problem, nil included: a problem that lapses while the device is
        // gone would tell the log that capture works again.
        let problems = Locked<[String?]>([])
        let updates = session.statusUpdates()
        let recorder = Task {
            for await status in updates {
                problems.withLock { if $0.last != .some(status.captureProblem) { $0.append(status.captureProblem) } }
            }
        }
        defer { recorder.cancel() }
        session.prepare()
        #expect((await session.result()).mediaItems.first?.mediaItem.id == "ref1")

        try FileManager.default.removeItem(atPath: infile)
        try await eventually("the device cannot be opened", { session.status }, until: { $0.captureProblem?.contains("cannot open for capture") == true })
        let status = session.status
        #expect(status.captureProblem?.hasPrefix("ALSA device \"\(device)\"") == true)
        #expect(status.window == 0 && status.currentMatch == nil)
        guard case .error(let error) = await session.result() else {
            Issue.record("answered from the audio heard before the device was unplugged")
            return
        }
        #expect(error.message.contains(device))
        #expect(session.status.captureProblem != nil)
        // First the loss, then why it cannot be opened again; each reason once, not per retry,
        // and no moment without a problem in between. The recorder hears of each change through
        // the status stream, which may lag the status read above on a loaded machine: give it
        // time to catch up (a third reason or a lapse would still show).
        _ = try? await eventually("the recorder hears both reasons", within: .seconds(10)) { problems.withLock { $0.drop { $0 == nil }.count } >= 2 }
        let seen = Array(problems.withLock { $0 }.drop { $0 == nil })
        #expect(seen.first == "ALSA device \"\(device)\": capture stopped: no such device; it was unplugged or its driver went away",
                "\(seen)")
        #expect(seen.count == 2, "\(seen)")

        _ = try RawPCM.writeS16(programme, to: infile)
        try await eventually("audio flows again", { session.status }, until: { $0.captureProblem == nil })
        #expect((await session.result()).mediaItems.first?.mediaItem.id == "ref1")
        #expect(session.status.sourceStatistics.reopenAttempts >= 2)
    }
}
