import EarshotCore
import EarshotSync
import EarshotTestSupport
import Foundation
import Synchronization
import Testing

@testable import EarshotAudio

/// A capture device that follows a script, for the faults a file PCM cannot produce: overruns,
/// suspends, a device that vanishes or goes quiet. Each read takes the next step; when the
/// script is used up the device has nothing ready (`-EAGAIN`, and waits time out).
final class ScriptedInput: CaptureInput, @unchecked Sendable {
    enum Step {
        /// A period of S16 samples counting up from the previous one.
        case period
        /// A read that fails with this (negative) code.
        case error(Int32)
    }

    let parameters: AlsaCaptureParameters
    private var script: [Step]
    private var next: Int16 = 1
    private let recoverResult: Int32
    let recoveries = Atomic<Int>(0)

    init(_ script: [Step], rate: Int = 16_000, recoverResult: Int32 = 0) {
        parameters = AlsaCaptureParameters(
            device: "scripted", sampleFormat: .s16LE, sampleRate: rate, channelCount: 1, periodFrames: 4,
            bufferFrames: 16)
        self.script = script
        self.recoverResult = recoverResult
    }

    func start() -> Int32 { 0 }

    func read(into buffer: UnsafeMutableRawPointer, frames: Int) -> Int {
        guard !script.isEmpty else { return -Int(EAGAIN) }
        switch script.removeFirst() {
        case .period:
            let samples = buffer.assumingMemoryBound(to: Int16.self)
            for i in 0..<frames {
                samples[i] = next
                next &+= 1
            }
            return frames
        case .error(let code):
            return Int(code)
        }
    }

    func wait(milliseconds: Int32) -> Int32 {
        usleep(UInt32(milliseconds) * 1000)
        return 0
    }

    func recover(_ error: Int32) -> Int32 {
        recoveries.add(1, ordering: .relaxed)
        return recoverResult
    }
}

/// Hands out scripted devices (or errors) in turn, one per open.
final class ScriptedOpener: Sendable {
    enum Outcome: @unchecked Sendable {
        case device(ScriptedInput)
        case failure(EarshotError)
    }

    private let outcomes: Locked<[Outcome]>
    /// The `requiredSampleRate` of every open so far.
    let requiredRates = Locked<[Int?]>([])

    init(_ outcomes: [Outcome]) {
        self.outcomes = Locked(outcomes)
    }

    func open(_ configuration: AlsaCaptureConfiguration, _ rate: Int?) throws(EarshotError) -> any CaptureInput {
        requiredRates.withLock { $0.append(rate) }
        let outcome = outcomes.withLock { $0.isEmpty ? nil : $0.removeFirst() }
        switch outcome {
        case .device(let input): return input
        case .failure(let error): throw error
        case nil: throw .internalError("script exhausted")
        }
    }
}

@Suite("Capture faults")
struct CaptureFaultTests {
    private func source(_ opener: ScriptedOpener, stallTimeout: Double = 5, retry: ClosedRange<Double>? = 0.01...0.04) -> AlsaAudioSource {
        AlsaAudioSource(
            configuration: AlsaCaptureConfiguration(device: "scripted"), bufferDuration: 1, realtimePriority: nil,
            retryDelays: retry, stallTimeout: stallTimeout
        ) { configuration, rate throws(EarshotError) in
            try opener.open(configuration, rate)
        }
    }

    @Test("overruns and suspends are recovered, counted, and do not reorder samples")
    func xrunsAreRecovered() throws {
        let input = ScriptedInput([.period, .error(-EPIPE), .period, .error(-ESTRPIPE), .period, .error(-EINTR), .period])
        let source = source(ScriptedOpener([.device(input)]))
        source.start()
        defer { source.stop() }
        let samples = SourceDriver.collect(source, count: 16, timeout: 5)
        #expect(samples == (1...16).map { Float($0) / 32768 })
        let statistics = source.statistics
        #expect(statistics.xruns == 2)  // an interrupted call is not an overrun
        #expect(statistics.framesCaptured == 16)
        #expect(statistics.gaps == 2)
        #expect(input.recoveries.load(ordering: .relaxed) == 3)
        #expect(source.state == .running)
    }

    @Test("a vanished device is reported with the reason, then reopened at the same rate")
    func vanishedDeviceIsReopened() throws {
        let opener = ScriptedOpener([
            .device(ScriptedInput([.period, .error(-ENODEV)], rate: 44_100)),
            .failure(.internalError("ALSA device \"scripted\": cannot open for capture: no such device")),
            .device(ScriptedInput([.period, .period], rate: 44_100)),
        ])
        // The state at each open, seen from the opener (which runs on the capture thread).
        let watched = Locked<AlsaAudioSource?>(nil)
        let statesAtOpen = Locked<[String]>([])
        let source = AlsaAudioSource(
            configuration: AlsaCaptureConfiguration(device: "scripted"), bufferDuration: 1, realtimePriority: nil,
            retryDelays: 0.01...0.04, stallTimeout: 5
        ) { configuration, rate throws(EarshotError) in
            let state = watched.withLock { $0?.state.description } ?? "?"
            statesAtOpen.withLock { $0.append(state) }
            return try opener.open(configuration, rate)
        }
        watched.withLock { $0 = source }
        var seen: [String] = []
        source.start()
        defer { source.stop() }
        // Watch the states go by (a poll may miss the short ones).
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline {
            let description = source.state.description
            if seen.last != description { seen.append(description) }
            if source.statistics.framesCaptured == 12 && source.state == .running { break }
            usleep(200)
        }
        watched.withLock { $0 = nil }
        #expect(source.statistics.framesCaptured == 12)
        #expect(source.statistics.reopenAttempts == 2)
        #expect(source.statistics.gaps == 1)  // one reopen after capture had run
        #expect(source.sampleRate == 44_100)
        #expect(opener.requiredRates.withLock { $0 } == [nil, 44_100, 44_100])
        // The first failure names the device and the cause.
        let failure = seen.first { $0.hasPrefix("failed") } ?? ""
        #expect(failure.contains("ALSA device \"scripted\": capture stopped: no such device; it was unplugged"), "states: \(seen)")
        #expect(statesAtOpen.withLock { $0 } == ["starting", "retrying", "retrying"])
        #expect(seen.last == "running")
    }

    @Test("an overrun that cannot be recovered ends the loop with the reason")
    func failedRecoveryIsReported() throws {
        let source = source(ScriptedOpener([.device(ScriptedInput([.error(-EPIPE)], recoverResult: -EIO))]), retry: nil)
        source.start()
        defer { source.stop() }
        try eventuallyBlocking("the source fails") { source.state.isFailed }
        #expect(source.state.failureMessage?.contains("overran and could not be restarted") == true)
        #expect(source.statistics.xruns == 1)
    }

    @Test("a device that goes quiet is failed after the stall timeout")
    func stallIsDetected() throws {
        let source = source(ScriptedOpener([.device(ScriptedInput([.period]))]), stallTimeout: 0.2, retry: nil)
        let start = Date()
        source.start()
        defer { source.stop() }
        try eventuallyBlocking("the source fails") { source.state.isFailed }
        let elapsed = Date().timeIntervalSince(start)
        #expect(elapsed > 0.19 && elapsed < 2, "failed after \(elapsed) s")
        #expect(source.state.failureMessage?.contains("no audio for 0.2 s") == true, "\(source.state)")
    }

    @Test("a waiting consumer is woken by new samples within a few milliseconds")
    func consumerWakeUp() throws {
        // The device has nothing for 100 ms (one wait timeout), then one period.
        final class Late: CaptureInput, @unchecked Sendable {
            let parameters = AlsaCaptureParameters(
                device: "late", sampleFormat: .s16LE, sampleRate: 16_000, channelCount: 1, periodFrames: 4, bufferFrames: 16)
            var delivered = false
            var deliveredAt = Date.distantFuture
            var readyAt = Date.distantFuture
            func start() -> Int32 { 0 }
            func read(into buffer: UnsafeMutableRawPointer, frames: Int) -> Int {
                guard !delivered, Date() >= readyAt else { return -Int(EAGAIN) }
                delivered = true
                deliveredAt = Date()
                buffer.initializeMemory(as: Int16.self, repeating: 100, count: frames)
                return frames
            }
            func wait(milliseconds: Int32) -> Int32 {
                if readyAt == .distantFuture { readyAt = Date().addingTimeInterval(0.1) }
                let sleep = max(0, min(Double(milliseconds) / 1000, readyAt.timeIntervalSinceNow))
                usleep(UInt32(sleep * 1e6))
                return Date() >= readyAt && !delivered ? 1 : 0
            }
            func recover(_ error: Int32) -> Int32 { 0 }
        }
        let late = Late()
        let source = AlsaAudioSource(
            configuration: AlsaCaptureConfiguration(device: "late"), bufferDuration: 1, realtimePriority: nil,
            retryDelays: nil, stallTimeout: 5
        ) { _, _ throws(EarshotError) in late }
        source.start()
        defer { source.stop() }
        try eventuallyBlocking("the source runs") { source.state == .running }
        let start = Date()
        var woke = false
        while !woke && Date().timeIntervalSince(start) < 2 { woke = source.waitForSamples(timeout: 1) }
        let latency = Date().timeIntervalSince(late.deliveredAt)
        #expect(woke)
        // Woken by the capture thread, not by the 1 s timeout (nor a poll).
        #expect(latency >= 0 && latency < 0.02, "woke \(latency * 1000) ms after the samples arrived")
    }
}
