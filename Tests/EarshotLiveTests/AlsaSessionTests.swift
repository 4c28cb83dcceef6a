import EarshotAudio
import EarshotCore
import EarshotLive
import EarshotTestSupport
import Foundation
import Testing

/// The whole live path through real ALSA: alsa-lib's `file` PCM reads programme audio from a raw
/// file (no sound card needed), the capture thread puts it in the ring, the session fingerprints
/// and matches it.
struct AlsaSessionTests {
    let fixture = LiveFixture.shared

    @Test func capturedProgrammeMatchesEndToEnd() async throws {
        AlsaTestEnvironment.prepare()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("earshot-live-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
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
        let deadline = ContinuousClock.now + .seconds(60)
        while session.status.captureProblem == nil, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        let problem = try #require(session.status.captureProblem)
        #expect(problem.contains("earshot_no_such_pcm"))
        guard case .error(.matchAttemptFailed(let message)) = await session.result() else {
            Issue.record("expected matchAttemptFailed")
            return
        }
        #expect(message.contains("earshot_no_such_pcm"))
    }
}
