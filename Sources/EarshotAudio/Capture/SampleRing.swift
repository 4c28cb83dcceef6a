import Synchronization

/// A fixed-size ring of `Float` samples between exactly one producer thread and one consumer
/// thread, without locks.
///
/// The capture thread writes what it has captured and must never wait, so a write that does
/// not fit is cut short: the samples that do not fit are dropped and counted in
/// `droppedSamples` (the oldest unread samples are kept, so the consumer sees a gap rather than
/// reordered audio). All memory is allocated by `init`; `write` and `read` only copy.
///
/// `write` may be called from one thread at a time and `read` from one (other) thread at a time;
/// the counters may be read from anywhere.
public final class SampleRing: Sendable {
    /// The number of samples the ring holds when full (the requested capacity rounded up to a
    /// power of two, so that positions wrap with a mask).
    public let capacity: Int

    private let mask: Int
    // The storage is written only by the producer (between `tail` and `tail + capacity`) and read
    // only by the consumer (between `tail` and `head`); the acquire/release pairs on the two
    // positions order those accesses, so the pointer itself needs no synchronisation.
    nonisolated(unsafe) private let storage: UnsafeMutablePointer<Float>
    /// Samples written so far (never wraps: 2^63 samples is millions of years of audio). Stored
    /// by the producer with release, so a consumer that loads it with acquire sees the samples.
    private let head = Atomic<Int>(0)
    /// Samples read so far. Stored by the consumer with release, so the producer that loads it
    /// with acquire never overwrites a sample that is still being read.
    private let tail = Atomic<Int>(0)
    private let dropped = Atomic<Int>(0)
    private let overflows = Atomic<Int>(0)

    /// A ring with room for at least `minimumCapacity` samples (which must be positive).
    public init(minimumCapacity: Int) {
        precondition(minimumCapacity > 0 && minimumCapacity <= 1 << 40, "ring capacity out of range")
        var size = 1
        while size < minimumCapacity { size <<= 1 }
        capacity = size
        mask = size - 1
        storage = .allocate(capacity: size)
        storage.initialize(repeating: 0, count: size)
    }

    deinit {
        storage.deallocate()
    }

    // MARK: Producer

    /// Appends as many of `samples` as fit and returns how many that was; the rest are dropped
    /// and added to `droppedSamples`. Never blocks or allocates. Producer thread only.
    @discardableResult
    public func write(_ samples: UnsafeBufferPointer<Float>) -> Int {
        guard let source = samples.baseAddress, samples.count > 0 else { return 0 }
        let position = head.load(ordering: .relaxed)  // only this thread stores it
        let free = capacity - (position - tail.load(ordering: .acquiring))
        let count = min(samples.count, free)
        if count < samples.count {
            dropped.add(samples.count - count, ordering: .relaxed)
            overflows.add(1, ordering: .relaxed)
        }
        if count > 0 {
            let start = position & mask
            let first = min(count, capacity - start)
            (storage + start).update(from: source, count: first)
            if first < count {
                storage.update(from: source + first, count: count - first)
            }
            head.store(position + count, ordering: .releasing)
        }
        return count
    }

    // MARK: Consumer

    /// Moves up to `buffer.count` of the oldest unread samples into `buffer` and returns how
    /// many; 0 when the ring is empty. Never blocks or allocates. Consumer thread only.
    public func read(into buffer: UnsafeMutableBufferPointer<Float>) -> Int {
        guard let destination = buffer.baseAddress, buffer.count > 0 else { return 0 }
        let position = tail.load(ordering: .relaxed)  // only this thread stores it
        let available = head.load(ordering: .acquiring) - position
        let count = min(buffer.count, available)
        if count > 0 {
            let start = position & mask
            let first = min(count, capacity - start)
            destination.update(from: storage + start, count: first)
            if first < count {
                (destination + first).update(from: storage, count: count - first)
            }
            tail.store(position + count, ordering: .releasing)
        }
        return count
    }

    /// Unread samples at this moment. Exact on the consumer thread (it can only grow under it);
    /// a snapshot anywhere else.
    public var availableSamples: Int {
        let t = tail.load(ordering: .acquiring)
        return head.load(ordering: .acquiring) - t
    }

    // MARK: Counters

    /// Samples ever accepted by `write`.
    public var writtenSamples: Int { head.load(ordering: .relaxed) }
    /// Samples ever handed out by `read`.
    public var readSamples: Int { tail.load(ordering: .relaxed) }
    /// Samples `write` dropped because the ring was full.
    public var droppedSamples: Int { dropped.load(ordering: .relaxed) }
    /// Writes that had to drop samples; each leaves a gap in what the consumer reads.
    public var overflowCount: Int { overflows.load(ordering: .relaxed) }
}
