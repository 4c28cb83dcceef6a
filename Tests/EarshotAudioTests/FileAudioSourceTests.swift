import EarshotCore
import EarshotSync
import EarshotTestSupport
import Foundation
import Testing

@testable import EarshotAudio

/// A clock the test moves by hand.
final class ManualClock: Sendable {
    private let time = Locked(0.0)
    var now: Double { time.withLock { $0 } }
    func set(_ t: Double) { time.withLock { $0 = t } }
}

@Suite("File audio sources")
struct FileAudioSourceTests {
    /// The mono samples of the file, as the decoder makes them.
    private func decoded(_ path: String) throws -> [Float] {
        var samples: [Float] = []
        try AudioFileDecoder.decode(path: path).appendMono(to: &samples)
        return samples
    }

    @Test("delivers the whole file unpaced, mixed to mono, then finishes")
    func fileSource() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("stereo.wav")
        try Sox.sine(to: path, frequencies: [440, 880], seconds: 1.3, rate: 22_050)
        let source = try FileAudioSource(path: path)
        #expect(source.sampleRate == 22_050)
        #expect(source.state == .idle)
        var probe = [Float](repeating: 0, count: 8)
        #expect(probe.withUnsafeMutableBufferPointer { source.read(into: $0) } == 0)  // not started

        source.start()
        let start = Date()
        let samples = SourceDriver.drain(source)
        #expect(Date().timeIntervalSince(start) < 1)
        #expect(samples == (try decoded(path)))
        #expect(samples.count == 28_665)
        #expect(source.state == .finished)
        #expect(source.statistics.framesCaptured == 28_665)
        #expect(source.waitForSamples(timeout: 1) == false)
    }

    @Test("a missing file is an error at once")
    func missingFile() {
        #expect(throws: EarshotError.self) { try FileAudioSource(path: "/nonexistent/audio.wav") }
        #expect(throws: EarshotError.self) { try PacedFileAudioSource(path: "/nonexistent/audio.wav") }
    }

    @Test("a file cut short part way ends in failed with the reason")
    func truncatedFile() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("tone.flac")
        try Sox.sine(to: path, seconds: 3, rate: 16_000)
        let cut = try dir.truncatedCopy(
            of: path, keeping: Int((try FileManager.default.attributesOfItem(atPath: path)[.size] as! NSNumber).intValue / 2),
            to: "cut.flac")
        let source = try FileAudioSource(path: cut)
        source.start()
        _ = SourceDriver.drain(source)
        // libsndfile may see the cut as a clean end or as corruption; both end the stream.
        switch source.state {
        case .finished: break
        case .failed(let error): #expect(error.message.contains("cut.flac"))
        default: Issue.record("state \(source.state)")
        }
    }

    @Test("the paced source releases whole 20 ms blocks as the clock advances")
    func pacedBlocks() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("tone.wav")
        try Sox.sine(to: path, seconds: 0.5, rate: 16_000)
        let all = try decoded(path)
        let clock = ManualClock()
        let source = try PacedFileAudioSource(
            path: path, loop: false, blockDuration: 0.02, bufferDuration: 4, clock: { clock.now })
        var buffer = [Float](repeating: 0, count: 20_000)
        func read() -> [Float] {
            let n = buffer.withUnsafeMutableBufferPointer { source.read(into: $0) }
            return Array(buffer[..<n])
        }
        clock.set(100)
        source.start()
        #expect(read().isEmpty)
        clock.set(100.019)
        #expect(read().isEmpty)
        #expect(source.waitForSamples(timeout: 0) == false)
        clock.set(100.02)
        #expect(source.waitForSamples(timeout: 0))
        var got = read()
        #expect(got == Array(all[0..<320]))
        clock.set(100.1)
        got += read()
        #expect(got == Array(all[0..<1600]))
        clock.set(101)
        got += read()
        #expect(got == all)
        // That read ran into the end of the file.
        #expect(source.state == .finished)
        #expect(read().isEmpty)
        #expect(source.statistics.framesCaptured == all.count)
    }

    @Test("a looping paced source starts the file over and keeps time")
    func pacedLoop() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("tone.wav")
        try Sox.sine(to: path, seconds: 0.25, rate: 16_000)
        let all = try decoded(path)
        let clock = ManualClock()
        let source = try PacedFileAudioSource(
            path: path, loop: true, blockDuration: 0.02, bufferDuration: 4, clock: { clock.now })
        source.start()
        clock.set(1)  // four passes through the file
        var buffer = [Float](repeating: 0, count: 20_000)
        let n = buffer.withUnsafeMutableBufferPointer { source.read(into: $0) }
        #expect(n == 16_000)
        #expect(Array(buffer[0..<4000]) == all)
        #expect(Array(buffer[4000..<8000]) == all)
        #expect(Array(buffer[12_000..<16_000]) == all)
        #expect(source.state == .running)
        #expect(source.statistics.framesCaptured == 16_000)
        #expect(source.statistics.droppedSamples == 0)
        // Each new pass starts the audio over (a consumer must not take it for continuing).
        #expect(source.statistics.restarts == 3)
        #expect(source.statistics.gaps == 0)
    }

    @Test("a consumer further behind than the buffer loses the oldest audio, counted")
    func pacedOverflow() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("tone.wav")
        try Sox.sine(to: path, seconds: 3, rate: 16_000)
        let all = try decoded(path)
        let clock = ManualClock()
        let source = try PacedFileAudioSource(
            path: path, loop: false, blockDuration: 0.02, bufferDuration: 1, clock: { clock.now })
        source.start()
        clock.set(2.5)
        var buffer = [Float](repeating: 0, count: 48_000)
        let n = buffer.withUnsafeMutableBufferPointer { source.read(into: $0) }
        #expect(n == 16_000)
        #expect(Array(buffer[0..<n]) == Array(all[24_000..<40_000]))
        #expect(source.statistics.droppedSamples == 24_000)
        #expect(source.statistics.gaps == 1)
    }

    @Test("in real time, samples arrive as the clock passes and a waiting consumer wakes per block")
    func pacedRealTime() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("tone.wav")
        try Sox.sine(to: path, seconds: 0.4, rate: 16_000)
        let source = try PacedFileAudioSource(path: path)
        let start = Date()
        source.start()
        var lateness: [Double] = []
        var buffer = [Float](repeating: 0, count: 8_000)
        var total = 0
        while total < 6_400 && Date().timeIntervalSince(start) < 3 {
            guard source.waitForSamples(timeout: 1) else { continue }
            let n = buffer.withUnsafeMutableBufferPointer { source.read(into: $0) }
            total += n
            // How long after its due time the newest block was handed over.
            lateness.append(Date().timeIntervalSince(start) - Double(total) / 16_000)
        }
        let elapsed = Date().timeIntervalSince(start)
        #expect(total == 6_400)
        #expect(elapsed > 0.39 && elapsed < 0.8, "0.4 s of audio took \(elapsed) s")
        let worst = lateness.max() ?? 1
        #expect(worst < 0.05, "a block was handed over \(worst * 1000) ms late")
        source.stop()
        #expect(source.state == .stopped)
        #expect(source.waitForSamples(timeout: 1) == false)
    }

    @Test("stop wakes a consumer waiting on a paced source")
    func pacedStopWakes() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("tone.wav")
        try Sox.sine(to: path, seconds: 1, rate: 16_000)
        let source = try PacedFileAudioSource(path: path, blockDuration: 0.5)
        source.start()
        let waiterID = Locked<String?>(nil)
        let waiter = TestThread {
            waiterID.withLock { $0 = SourceDriver.currentThreadID() }
            while source.state == .running { _ = source.waitForSamples(timeout: 5) }
        }
        try eventuallyBlocking("the consumer sleeps in its wait") { waiterID.withLock { $0 }.map(SourceDriver.isAsleep) == true }
        let start = Date()
        source.stop()
        waiter.join()
        #expect(Date().timeIntervalSince(start) < 0.5)
    }
}
