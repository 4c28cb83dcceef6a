import EarshotAudio
import Foundation
import Testing

@Suite("SampleRing")
struct SampleRingTests {
    private func write(_ ring: SampleRing, _ samples: [Float]) -> Int {
        samples.withUnsafeBufferPointer { ring.write($0) }
    }

    private func read(_ ring: SampleRing, max count: Int) -> [Float] {
        var out = [Float](repeating: .nan, count: count)
        let n = out.withUnsafeMutableBufferPointer { ring.read(into: $0) }
        return Array(out[..<n])
    }

    @Test("capacity is rounded up to a power of two")
    func capacityRoundsUp() {
        #expect(SampleRing(minimumCapacity: 1).capacity == 1)
        #expect(SampleRing(minimumCapacity: 1000).capacity == 1024)
        #expect(SampleRing(minimumCapacity: 1024).capacity == 1024)
    }

    @Test("reads return samples in order across the wrap-around")
    func wrapsAround() {
        let ring = SampleRing(minimumCapacity: 8)
        var next: Float = 0
        var expected: Float = 0
        for step in 0..<50 {
            let chunk = (0..<(1 + step % 5)).map { i in next + Float(i) }
            #expect(write(ring, chunk) == chunk.count)
            next += Float(chunk.count)
            for sample in read(ring, max: 3 + step % 4) {
                #expect(sample == expected)
                expected += 1
            }
            // Drain whenever it gets close to full so nothing is dropped here.
            if ring.availableSamples > 3 {
                for sample in read(ring, max: 8) {
                    #expect(sample == expected)
                    expected += 1
                }
            }
        }
        #expect(ring.droppedSamples == 0)
        #expect(ring.writtenSamples == Int(next))
    }

    @Test("a full ring drops the newest samples and counts them")
    func overflowDropsAndCounts() {
        let ring = SampleRing(minimumCapacity: 8)
        #expect(write(ring, (0..<6).map(Float.init)) == 6)
        #expect(write(ring, (6..<12).map(Float.init)) == 2)  // only 6 and 7 fit
        #expect(ring.droppedSamples == 4)
        #expect(ring.overflowCount == 1)
        #expect(write(ring, [99]) == 0)
        #expect(ring.droppedSamples == 5)
        #expect(read(ring, max: 100) == (0..<8).map(Float.init))
        #expect(read(ring, max: 100).isEmpty)
        #expect(write(ring, [12, 13]) == 2)
        #expect(read(ring, max: 100) == [12, 13])
        #expect(ring.readSamples == 10)
    }

    @Test("empty reads and writes do nothing")
    func emptyOperations() {
        let ring = SampleRing(minimumCapacity: 4)
        #expect(write(ring, []) == 0)
        #expect(read(ring, max: 0).isEmpty)
        #expect(read(ring, max: 4).isEmpty)
        #expect(ring.droppedSamples == 0)
    }

    /// Sample `i` of the test sequences; exact in a Float for i < 2^24.
    private static func value(_ i: Int) -> Float { Float(i % 16_777_216) }

    @Test("two threads: a producer that retries when full loses nothing and keeps the order")
    func twoThreadsLossless() async throws {
        let ring = SampleRing(minimumCapacity: 4096)
        let total = 3_000_000
        let producer = TestThread {
            var chunk = [Float](repeating: 0, count: 500)
            var sent = 0
            var size = 1
            while sent < total {
                size = size % 499 + 1  // 1…499 samples per write, varying
                let n = min(size, total - sent)
                for i in 0..<n { chunk[i] = Self.value(sent + i) }
                var offset = 0
                while offset < n {
                    let written = chunk.withUnsafeBufferPointer {
                        ring.write(UnsafeBufferPointer(rebasing: $0[offset..<n]))
                    }
                    offset += written
                    if written == 0 { sched_yield() }
                }
                sent += n
            }
        }
        var received = 0
        var mismatches = 0
        var buffer = [Float](repeating: 0, count: 777)
        while received < total {
            let n = buffer.withUnsafeMutableBufferPointer { ring.read(into: $0) }
            if n == 0 {
                sched_yield()
                continue
            }
            for i in 0..<n where buffer[i] != Self.value(received + i) { mismatches += 1 }
            received += n
        }
        producer.join()
        #expect(mismatches == 0)
        #expect(received == total)
        // The producer's retries of a full ring are counted as drops; what matters is that
        // every sample arrived once, in order.
        #expect(ring.writtenSamples == total)
        #expect(ring.readSamples == total)
    }

    @Test("two threads: a slow consumer sees an increasing sequence; read + dropped = offered")
    func twoThreadsLossy() async throws {
        let ring = SampleRing(minimumCapacity: 1024)
        let total = 1_000_000
        let producer = TestThread {
            var chunk = [Float](repeating: 0, count: 320)
            var sent = 0
            while sent < total {
                let n = min(320, total - sent)
                for i in 0..<n { chunk[i] = Self.value(sent + i) }
                chunk.withUnsafeBufferPointer { _ = ring.write(UnsafeBufferPointer(rebasing: $0[0..<n])) }
                sent += n
            }
        }
        var received = 0
        var previous: Float = -1
        var outOfOrder = 0
        var buffer = [Float](repeating: 0, count: 100)
        while !producer.isFinished || ring.availableSamples > 0 {
            let n = buffer.withUnsafeMutableBufferPointer { ring.read(into: $0) }
            for i in 0..<n {
                if buffer[i] <= previous { outOfOrder += 1 }
                previous = buffer[i]
            }
            received += n
            if received % 7 == 0 { sched_yield() }
        }
        producer.join()
        #expect(outOfOrder == 0)
        #expect(received + ring.droppedSamples == total)
        #expect(ring.writtenSamples == received)
    }
}

/// A plain thread running `body`, to be joined; the test's own task is the other thread.
final class TestThread: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let finished = NSLock()
    private var _isFinished = false

    init(_ body: @escaping @Sendable () -> Void) {
        let thread = Thread { [self] in
            body()
            finished.withLock { _isFinished = true }
            done.signal()
        }
        thread.start()
    }

    var isFinished: Bool { finished.withLock { _isFinished } }

    func join() { done.wait() }
}
