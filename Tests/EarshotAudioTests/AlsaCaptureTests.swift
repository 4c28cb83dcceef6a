import EarshotCore
import EarshotTestSupport
import Foundation
import Testing

@testable import EarshotAudio

/// The real ALSA code path, through ALSA's `file` PCM (see `AlsaTestEnvironment`). Serialized:
/// the file PCM is unpaced, so each running capture keeps a core busy until it is stopped.
@Suite("ALSA capture", .serialized)
struct AlsaCaptureTests {
    init() {
        AlsaTestEnvironment.prepare()
    }

    /// A source on `device` with a ring big enough for the test input, normal scheduling (an
    /// unpaced device at realtime priority would hog a core), and quick retries.
    private func source(_ configuration: AlsaCaptureConfiguration, retry: ClosedRange<Double>? = 0.02...0.08) -> AlsaAudioSource {
        AlsaAudioSource(
            configuration: configuration, bufferDuration: 4, realtimePriority: nil, retryDelays: retry,
            stallTimeout: 2
        ) { configuration, rate throws(EarshotError) in
            try AlsaCapture(configuration: configuration, requiredSampleRate: rate)
        }
    }

    @Test("captures a raw S16 file through alsa-lib sample for sample, then silence past its end")
    func capturesS16File() throws {
        let dir = try TemporaryDirectory()
        let input = RawPCM.int16(SyntheticMusic.make(seed: 11, duration: 2))
        let path = try RawPCM.writeS16(input, to: dir.path("music.s16"))
        let source = source(AlsaCaptureConfiguration(device: AlsaTestEnvironment.device(reading: path)))
        #expect(source.state == .idle)
        #expect(source.sampleRate == nil)
        source.start()
        defer { source.stop() }

        let captured = SourceDriver.collect(source, count: input.count + 3200)
        try #require(captured.count == input.count + 3200, "state: \(source.state)")
        let expected = input.map { Float($0) / 32768 }
        let mismatches = zip(captured, expected).filter { $0 != $1 }.count
        #expect(mismatches == 0)
        // alsa-lib 1.2.8 keeps reporting full periods past the end of the infile without
        // writing them; the capture loop zeroes its buffer first, so they arrive as silence.
        #expect(captured[input.count...].allSatisfy { $0 == 0 })

        let parameters = try #require(source.parameters)
        #expect(parameters.sampleFormat == .s16LE)
        #expect(parameters.sampleRate == 16_000)
        #expect(parameters.channelCount == 1)
        #expect(parameters.periodFrames == 320)
        #expect(parameters.bufferFrames == 1280)
        #expect(parameters.outputFormat == AudioFormat(sampleType: .float32, sampleRate: 16_000, channelCount: 1))
        #expect(source.sampleRate == 16_000)
        #expect(source.state == .running)
        #expect(source.realtimeScheduling == .notRequested)

        // Unpaced, the file PCM outruns any consumer: the ring fills and the overflow is counted.
        try eventuallyBlocking("the ring overflows") { source.statistics.droppedSamples > 0 }
        let statistics = source.statistics
        #expect(statistics.framesCaptured >= input.count + 3200)
        #expect(statistics.xruns == 0)
        #expect(statistics.reopenAttempts == 0)
        #expect(statistics.gaps > 0)
    }

    @Test("mixes a stereo capture to the average of its channels")
    func mixesStereo() throws {
        let dir = try TemporaryDirectory()
        let left = RawPCM.int16(SyntheticMusic.make(seed: 1, duration: 0.5))
        let right = RawPCM.int16(SyntheticMusic.make(seed: 2, duration: 0.5))
        let interleaved = zip(left, right).flatMap { [$0, $1] }
        let path = try RawPCM.writeS16(interleaved, to: dir.path("stereo.s16"))
        let source = source(AlsaCaptureConfiguration(device: AlsaTestEnvironment.device(reading: path), channelCount: 2))
        source.start()
        defer { source.stop() }

        let captured = SourceDriver.collect(source, count: left.count)
        try #require(captured.count == left.count, "state: \(source.state)")
        #expect(source.parameters?.channelCount == 2)
        var worst: Float = 0
        for i in 0..<left.count {
            let expected = (Float(left[i]) + Float(right[i])) / 65536
            worst = max(worst, abs(captured[i] - expected))
        }
        #expect(worst < 1e-7)
    }

    @Test("falls back to FLOAT_LE on a device that has no S16_LE")
    func negotiatesFloat() throws {
        // Only the negotiation: under an mmap-based plugin such as lfloat, alsa-lib's file
        // plugin reads its infile for the whole area it maps but the parent commits only part of
        // it, so samples of the infile are skipped (measured: periods 2, 3, 4… came from input
        // frames 1280, 2240, 2880…). The file plugin read directly, as below, is exact.
        let capture = try AlsaCapture(
            configuration: AlsaCaptureConfiguration(device: AlsaTestEnvironment.device(reading: "/dev/zero", float: true)))
        #expect(capture.parameters.sampleFormat == .floatLE)
    }

    @Test("takes FLOAT_LE samples as they are")
    func capturesFloat() throws {
        let dir = try TemporaryDirectory()
        let input = SyntheticMusic.make(seed: 5, duration: 0.5)
        let path = try RawPCM.writeFloat(input, to: dir.path("music.f32"))
        let source = source(
            AlsaCaptureConfiguration(device: AlsaTestEnvironment.device(reading: path), sampleFormats: [.floatLE]))
        source.start()
        defer { source.stop() }

        let captured = SourceDriver.collect(source, count: input.count)
        try #require(captured.count == input.count, "state: \(source.state)")
        #expect(source.parameters?.sampleFormat == .floatLE)
        #expect(captured == input)
    }

    @Test("takes S32_LE when that is the format allowed")
    func capturesS32() throws {
        let dir = try TemporaryDirectory()
        let input: [Int32] = SyntheticMusic.make(seed: 6, duration: 0.5).map { Int32((Double($0) * 2_147_483_647).rounded()) }
        let path = try RawPCM.writeS32(input, to: dir.path("music.s32"))
        let source = source(
            AlsaCaptureConfiguration(device: AlsaTestEnvironment.device(reading: path), sampleFormats: [.s32LE]))
        source.start()
        defer { source.stop() }

        let captured = SourceDriver.collect(source, count: input.count)
        try #require(captured.count == input.count, "state: \(source.state)")
        #expect(source.parameters?.sampleFormat == .s32LE)
        let worst = zip(captured, input).map { abs($0 - Float($1) / 2_147_483_648) }.max() ?? 1
        #expect(worst < 1e-7)
    }

    @Test("opens at the rate asked for when the device has it, with a 20 ms period")
    func negotiatesRate() throws {
        let capture = try AlsaCapture(
            configuration: AlsaCaptureConfiguration(device: AlsaTestEnvironment.device(reading: "/dev/zero"), sampleRate: 44_100))
        #expect(capture.parameters.sampleRate == 44_100)
        #expect(capture.parameters.periodFrames == 882)
        #expect(capture.parameters.bufferFrames == 4 * 882)
        #expect(abs(capture.parameters.periodDuration - 0.02) < 1e-9)
        #expect(capture.parameters.description.contains("S16_LE 44100 Hz mono"))
    }

    @Test("a device that does not exist is a clear error, not a crash or a hang")
    func missingDeviceError() throws {
        do {
            _ = try AlsaCapture(configuration: AlsaCaptureConfiguration(device: "earshot_no_such_pcm"))
            Issue.record("opened a device that does not exist")
        } catch {
            #expect(error.code == 500)
            #expect(error.message.hasPrefix("ALSA device \"earshot_no_such_pcm\": cannot open for capture: no such device"))
            #expect(error.message.contains("alsa-lib: Unknown PCM earshot_no_such_pcm"), "\(error.message)")
        }
    }

    @Test("a file PCM whose infile is missing names the file")
    func missingInfileError() throws {
        do {
            _ = try AlsaCapture(
                configuration: AlsaCaptureConfiguration(device: AlsaTestEnvironment.device(reading: "/nonexistent/x.s16")))
            Issue.record("opened a file PCM without its infile")
        } catch {
            #expect(error.message.contains("/nonexistent/x.s16"), "\(error.message)")
        }
    }

    @Test("a device without any accepted format says what it offers")
    func noAcceptedFormat() throws {
        do {
            _ = try AlsaCapture(
                configuration: AlsaCaptureConfiguration(
                    device: AlsaTestEnvironment.device(reading: "/dev/zero", float: true), sampleFormats: [.s16LE, .s32LE]))
            Issue.record("negotiated a format the device does not have")
        } catch {
            #expect(error.code == 100)
            #expect(error.message.contains("offers none of the sample formats S16_LE, S32_LE (it offers FLOAT_LE, "), "\(error.message)")
        }
    }

    @Test("settings out of range are refused before ALSA is asked")
    func invalidConfiguration() throws {
        #expect(throws: EarshotError.self) { try AlsaCapture(configuration: AlsaCaptureConfiguration(channelCount: 3)) }
        #expect(throws: EarshotError.self) { try AlsaCapture(configuration: AlsaCaptureConfiguration(sampleRate: 4000)) }
        #expect(throws: EarshotError.self) { try AlsaCapture(configuration: AlsaCaptureConfiguration(periodsPerBuffer: 1)) }
    }

    @Test("a missing device puts the source in failed, retries with backoff, and stops promptly")
    func missingDeviceIsRetried() throws {
        let source = source(AlsaCaptureConfiguration(device: "earshot_no_such_pcm"))
        source.start()
        try eventuallyBlocking("two attempts to reopen the device") { source.statistics.reopenAttempts >= 2 }
        if source.state.failureMessage == nil {
            // Between "retrying" and the next failure; look again.
            try eventuallyBlocking("the source fails again") { source.state.isFailed }
        }
        let message = try #require(source.state.failureMessage)
        #expect(message.contains("ALSA device \"earshot_no_such_pcm\""))
        #expect(message.contains("no such device"))
        #expect(source.sampleRate == nil)
        #expect(source.parameters == nil)
        // A consumer waiting for samples is not stuck.
        #expect(source.waitForSamples(timeout: 0.05) == false)

        let start = Date()
        source.stop()
        #expect(Date().timeIntervalSince(start) < 1)
        #expect(source.state == .stopped)
        let attempts = source.statistics.reopenAttempts
        usleep(200_000)
        #expect(source.statistics.reopenAttempts == attempts)
    }

    @Test("the default source waits 0.5 s before reopening; stop cuts the pause short")
    func defaultBackoff() throws {
        let source = AlsaAudioSource(configuration: AlsaCaptureConfiguration(device: "earshot_no_such_pcm"), realtimePriority: 10)
        let start = Date()
        source.start()
        try eventuallyBlocking("the source fails") { source.state.isFailed }
        try eventuallyBlocking("the first attempt to reopen the device") { source.statistics.reopenAttempts == 1 }
        let firstRetry = Date().timeIntervalSince(start)
        #expect(firstRetry > 0.45 && firstRetry < 1.5, "first retry after \(firstRetry) s")
        // The next pause is 1 s; stopping must not wait for it.
        try eventuallyBlocking("the source fails") { source.state.isFailed }
        let stopStart = Date()
        source.stop()
        #expect(Date().timeIntervalSince(stopStart) < 0.3)
        #expect(source.statistics.reopenAttempts == 1)
        // Realtime scheduling was tried once and the outcome kept for the owner to log.
        switch source.realtimeScheduling {
        case .granted(let priority): #expect(priority == 10)
        case .denied(let reason): #expect(!reason.isEmpty)
        case .notRequested, nil: Issue.record("realtime scheduling was not tried")
        }
    }

    @Test("the capture thread is named, and stop() ends it")
    func threadIsNamedAndJoined() throws {
        let source = source(AlsaCaptureConfiguration(device: AlsaTestEnvironment.device(reading: "/dev/zero")))
        source.start()
        try eventuallyBlocking("the source runs") { source.state == .running }
        #expect(SourceDriver.threadNames().contains("earshot-capture"))
        let frames = source.statistics.framesCaptured
        try eventuallyBlocking("more frames are captured") { source.statistics.framesCaptured > frames }
        source.stop()
        #expect(source.state == .stopped)
        let after = source.statistics.framesCaptured
        usleep(50_000)
        #expect(source.statistics.framesCaptured == after)
        // Samples captured before the stop can still be read.
        var buffer = [Float](repeating: 1, count: 16)
        #expect(buffer.withUnsafeMutableBufferPointer { source.read(into: $0) } == 16)
        // A stopped source stays stopped.
        source.start()
        #expect(source.state == .stopped)
    }

    @Test("stop before start leaves nothing running")
    func stopBeforeStart() {
        let source = source(AlsaCaptureConfiguration(device: "earshot_no_such_pcm"))
        source.stop()
        source.start()
        #expect(source.state == .stopped)
        #expect(source.statistics == AudioSourceStatistics())
    }

    @Test("lists the capture PCMs with their descriptions")
    func listsDevices() throws {
        let devices = try CaptureDevices.list()
        let test = try #require(devices.first { $0.name == "earshot_test" }, "listed: \(devices.map(\.name))")
        #expect(test.description == "Earshot test: raw samples from a file")
    }
}
