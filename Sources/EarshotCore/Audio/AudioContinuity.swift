import FoundationEssentials

/// Checks that buffers stamped with audio-clock times follow one another: a gap or an overlap
/// means the audio on either side does not line up with any reference.
///
/// The expected time of the next buffer moves on by every buffer's length, stamped or not; an
/// unstamped buffer is taken to follow on. The tolerance is a millisecond, or one sample at
/// rates below 1 kHz.
public struct AudioContinuity: Sendable {
    /// A break in the stream: `seconds` of gap (positive) or overlap (negative) before the
    /// buffer stamped `time`.
    public struct Break: Sendable, Equatable {
        public let seconds: Double
        public let time: Double

        /// "gap of 0.500 s before the buffer at 1.500 s".
        public var description: String {
            "\(seconds > 0 ? "gap" : "overlap") of \(abs(seconds).decimalText(places: 3)) s before the buffer at \(time.decimalText(places: 3)) s"
        }
    }

    /// When the next buffer should start; nil until a stamped buffer arrives.
    public private(set) var expectedTime: Double?

    public init() {}

    /// Takes a buffer of `frames` frames at `rate` Hz stamped `time` (nil: it follows on).
    /// Returns the break before it, if any; the stream then continues from this buffer, so a
    /// caller that restarts after a break needs nothing else.
    public mutating func take(time: Double?, frames: Int, rate: Double) -> Break? {
        let length = Double(frames) / rate
        guard let time else {
            if let expected = expectedTime { expectedTime = expected + length }
            return nil
        }
        var found: Break?
        if let expected = expectedTime {
            let error = time - expected
            if abs(error) > max(0.001, 1 / rate) { found = Break(seconds: error, time: time) }
        }
        expectedTime = time + length
        return found
    }
}
