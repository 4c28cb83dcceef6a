import EarshotCore
import EarshotSync
import EarshotTestSupport
import Foundation
import Testing

@testable import EarshotAudio

/// What happens to a paced file source when its file goes away, changes or comes back, with the
/// clock moved by hand so the retry pauses can be checked exactly.
@Suite("Paced file faults")
struct PacedFileFaultTests {
    /// Two recognisable programmes: a rising ramp and a falling one, 16 kHz mono.
    private let first = (0..<16_000).map { Float($0 % 1000) / 2000 }
    private let second = (0..<16_000).map { -Float($0 % 1000) / 2000 }

    /// The samples as the WAV file stores them (16-bit), as the source delivers them.
    private func quantised(_ samples: [Float]) -> [Float] {
        WAVFile.asRead(samples)
    }

    private func source(_ path: String, clock: ManualClock, loop: Bool = true,
                        retryDelays: ClosedRange<Double>? = 0.25...5) throws -> PacedFileAudioSource {
        try PacedFileAudioSource(path: path, loop: loop, blockDuration: 0.02, bufferDuration: 4,
                                 retryDelays: retryDelays, clock: { clock.now })
    }

    private func read(_ source: PacedFileAudioSource) -> [Float] {
        var buffer = [Float](repeating: 0, count: 40_000)
        let n = buffer.withUnsafeMutableBufferPointer { source.read(into: $0) }
        return Array(buffer[..<n])
    }

    @Test("a deleted file is a failure naming it, retried after growing pauses, and plays from its start when it is back")
    func deletedFileIsRetriedUntilItIsBack() throws {
        let dir = try TemporaryDirectory()
        let path = try dir.write("tv.wav", WAVFile.bytes(first))
        let clock = ManualClock()
        clock.set(100)
        let source = try source(path, clock: clock)
        source.start()
        clock.set(100.1)
        #expect(read(source) == Array(quantised(first)[0..<1600]))

        try FileManager.default.removeItem(atPath: path)
        // Until the next look at the path, the open file plays on; then the source fails.
        clock.set(100.2)
        #expect(read(source).count == 1600)
        clock.set(100.25)
        #expect(read(source).isEmpty)
        let message = try #require(source.state.failureMessage, "\(source.state)")
        #expect(message == "\(path): no such file (the file does not exist)")
        #expect(source.statistics.reopenAttempts == 1)
        #expect(source.waitForSamples(timeout: 0) == false)

        // Tried again after 0.25 s, then 0.5, 1, 2, 4 and 5 s (the longest pause) between attempts.
        var attempts = 1
        var t = 100.25
        for pause in [0.25, 0.5, 1, 2, 4, 5, 5] {
            clock.set(t + pause - 0.01)
            #expect(read(source).isEmpty)
            #expect(source.statistics.reopenAttempts == attempts, "retried before a pause of \(pause) s was over")
            t += pause
            clock.set(t)
            #expect(read(source).isEmpty)
            attempts += 1
            #expect(source.statistics.reopenAttempts == attempts, "not retried after a pause of \(pause) s")
            #expect(source.state.isFailed)
        }

        // Back (as another programme): the next attempt opens it and plays it from its start.
        _ = try dir.write("tv.wav", WAVFile.bytes(second))
        t += 5
        clock.set(t)
        #expect(read(source).isEmpty)  // reopened at `t`: nothing is due yet
        #expect(source.state == .running)
        clock.set(t + 0.1)
        #expect(read(source) == Array(quantised(second)[0..<1600]))
        let statistics = source.statistics
        #expect(statistics.reopenAttempts == attempts + 1)
        #expect(statistics.gaps == 1)
        #expect(statistics.droppedSamples == 0)
        #expect(statistics.framesCaptured >= 3200)
    }

    enum Change: String, CaseIterable, CustomTestStringConvertible {
        case truncated, overwrittenWithGarbage
        var testDescription: String { rawValue }
    }

    @Test("a file truncated or overwritten in place is no audio: a failure until it is audio again", arguments: Change.allCases)
    func fileChangedInPlace(_ change: Change) throws {
        let dir = try TemporaryDirectory()
        let path = try dir.write("tv.wav", WAVFile.bytes(first))
        let clock = ManualClock()
        let source = try source(path, clock: clock)
        source.start()
        clock.set(0.1)
        #expect(read(source).count == 1600)

        // In place: the same inode, so the open file would read whatever is there now.
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.truncate(atOffset: 0)
        if change == .overwrittenWithGarbage {
            try handle.write(contentsOf: Data(repeating: 0x5A, count: 64_000))
        }
        try handle.close()
        clock.set(0.25)
        #expect(read(source).isEmpty)
        let message = try #require(source.state.failureMessage, "\(source.state)")
        switch change {
        case .truncated: #expect(message == "\(path): the file is empty; it holds no audio")
        case .overwrittenWithGarbage: #expect(message.hasPrefix("\(path): not a recognised audio file"), "\(message)")
        }

        // Audio again (replaced whole, by rename): playing from its start at the next attempt.
        let staged = try dir.write("staged.wav", WAVFile.bytes(second))
        #expect(rename(staged, path) == 0)
        clock.set(0.5)
        #expect(read(source).isEmpty)
        #expect(source.state == .running)
        clock.set(0.6)
        #expect(read(source) == Array(quantised(second)[0..<1600]))
    }

    @Test("a file replaced by another audio file plays the new one from its start, with no failure")
    func replacedFilePlaysTheNewOne() throws {
        let dir = try TemporaryDirectory()
        let path = try dir.write("tv.wav", WAVFile.bytes(first))
        let clock = ManualClock()
        let source = try source(path, clock: clock)
        source.start()
        clock.set(0.2)
        #expect(read(source) == Array(quantised(first)[0..<3200]))
        let staged = try dir.write("staged.wav", WAVFile.bytes(second))
        #expect(rename(staged, path) == 0)
        clock.set(0.25)
        #expect(read(source).isEmpty)  // reopened now; its first block is due in 20 ms
        #expect(source.state == .running)
        clock.set(0.35)
        #expect(read(source) == Array(quantised(second)[0..<1600]))
        #expect(source.statistics.reopenAttempts == 1)
        #expect(source.statistics.gaps == 1)
        #expect(source.statistics.restarts == 1)
    }

    @Test("a file replaced by one at another sample rate is a failure until the first rate is back")
    func otherSampleRateIsAFailure() throws {
        let dir = try TemporaryDirectory()
        let path = try dir.write("tv.wav", WAVFile.bytes(first))
        let clock = ManualClock()
        let source = try source(path, clock: clock)
        source.start()
        // Another length too: a rewrite within a clock tick of the first write may keep its mtime.
        _ = try dir.write("tv.wav", WAVFile.bytes(Array(second[0..<8000]), sampleRate: 44_100))
        clock.set(0.25)
        #expect(read(source).isEmpty)
        #expect(source.state.failureMessage == "\(path): the file now has a sample rate of 44100 Hz, not 16000 Hz as when it was first opened")
        #expect(source.sampleRate == 16_000)
        _ = try dir.write("tv.wav", WAVFile.bytes(second))
        clock.set(0.5)
        #expect(read(source).isEmpty)
        #expect(source.state == .running)
    }

    @Test("a looping file that is gone when it starts over fails, and loops again once it is back")
    func goneAtTheLoopPoint() throws {
        let dir = try TemporaryDirectory()
        let path = try dir.write("tv.wav", WAVFile.bytes(Array(first[0..<1600])))  // 0.1 s
        let clock = ManualClock()
        let source = try source(path, clock: clock)
        source.start()
        clock.set(0.08)
        #expect(read(source).count == 1280)
        try FileManager.default.removeItem(atPath: path)
        clock.set(0.2)  // past the end of the file, before the path is looked at
        #expect(read(source).count == 320)
        #expect(source.state.failureMessage == "\(path): no such file (the file does not exist)")
        _ = try dir.write("tv.wav", WAVFile.bytes(first))
        clock.set(0.45)
        #expect(read(source).isEmpty)
        #expect(source.state == .running)
    }

    @Test("a source opening at start waits for a file that is not there yet")
    func openingAtStartRetries() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("later.wav")
        let clock = ManualClock()
        let source = PacedFileAudioSource(
            path: path, loop: false, blockDuration: 0.02, bufferDuration: 4, retryDelays: 0.25...5, stream: nil,
            clock: { clock.now })
        #expect(source.sampleRate == nil)
        source.start()
        #expect(source.state.failureMessage == "\(path): no such file (the file does not exist)")
        #expect(source.statistics.reopenAttempts == 0)
        _ = try dir.write("later.wav", WAVFile.bytes(first))
        clock.set(0.25)
        #expect(read(source).isEmpty)
        #expect(source.state == .running)
        #expect(source.sampleRate == 16_000)
        #expect(source.statistics.reopenAttempts == 1)
        #expect(source.statistics.gaps == 0)  // nothing had played: nothing is missing
        clock.set(0.35)
        #expect(read(source) == Array(quantised(first)[0..<1600]))
    }

    @Test("without retry delays a failure is final")
    func failureWithoutRetriesIsFinal() throws {
        let dir = try TemporaryDirectory()
        let path = try dir.write("tv.wav", WAVFile.bytes(first))
        let clock = ManualClock()
        let source = try source(path, clock: clock, retryDelays: nil)
        source.start()
        try FileManager.default.removeItem(atPath: path)
        clock.set(0.25)
        #expect(read(source).isEmpty)
        #expect(source.state.isFailed)
        _ = try dir.write("tv.wav", WAVFile.bytes(first))
        clock.set(100)
        #expect(read(source).isEmpty)
        #expect(source.state.isFailed)
        #expect(source.waitForSamples(timeout: 1) == false)
    }

    @Test("a consumer waiting on a failed source wakes when the file is back, and when the source is stopped")
    func waitingOnAFailedSource() throws {
        let dir = try TemporaryDirectory()
        let path = try dir.write("tv.wav", WAVFile.bytes(first))
        let source = try PacedFileAudioSource(path: path, loop: true, retryDelays: 0.05...0.05)
        source.start()
        try FileManager.default.removeItem(atPath: path)
        try eventuallyBlocking("the source fails") { _ = source.waitForSamples(timeout: 0.01); return source.state.isFailed }
        _ = try dir.write("tv.wav", WAVFile.bytes(first))
        // One wait sleeps through the retry pause, reopens the file and returns with its first block.
        #expect(source.waitForSamples(timeout: 60))
        #expect(source.state == .running)

        try FileManager.default.removeItem(atPath: path)
        try eventuallyBlocking("the source fails") { _ = source.waitForSamples(timeout: 0.01); return source.state.isFailed }
        // Returning at all shows the stop ended the wait (its timeout is an hour).
        let waiterID = Locked<String?>(nil)
        let waiter = TestThread {
            waiterID.withLock { $0 = SourceDriver.currentThreadID() }
            _ = source.waitForSamples(timeout: 3600)
        }
        try eventuallyBlocking("the consumer sleeps in its wait") { waiterID.withLock { $0 }.map(SourceDriver.isAsleep) == true }
        source.stop()
        waiter.join()
        #expect(source.state == .stopped)
    }
}
