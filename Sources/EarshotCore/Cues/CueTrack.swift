/// Where the programme is and how fast it runs, from recent consistent observations: a line
/// through (stream time, reference position). Averaging a few observations steadies the
/// position (each one is measured to a few milliseconds); the slope comes from the line when the
/// observations span long enough, else from the matcher's measured speed.
struct CueTrack: Sendable {
    struct Point: Sendable {
        var time: Double
        var position: Double
        var rate: Double
    }

    /// Observations kept, and how far back (stream seconds).
    static let capacity = 8
    static let span = 8.0
    /// Shortest span over which the line's slope is trusted over the measured speed.
    static let slopeSpan = 4.0

    private(set) var points: [Point] = []
    private(set) var rate = 1.0
    private var meanTime = 0.0
    private var meanPosition = 0.0

    init(time: Double, position: Double, rate: Double) {
        points.reserveCapacity(Self.capacity + 1)
        add(time: time, position: position, rate: rate)
    }

    /// Position (reference seconds) at stream time `t`.
    func position(at t: Double) -> Double { meanPosition + rate * (t - meanTime) }

    /// Stream time at which the programme reaches `position`.
    func time(at position: Double) -> Double { meanTime + (position - meanPosition) / rate }

    var lastTime: Double { points.last?.time ?? meanTime }

    mutating func add(time: Double, position: Double, rate measured: Double) {
        points.append(Point(time: time, position: position, rate: min(max(measured, 0.8), 1.25)))
        while points.count > Self.capacity || (points.count > 1 && time - points[0].time > Self.span) {
            points.removeFirst()
        }
        refit()
    }

    private mutating func refit() {
        let n = Double(points.count)
        var t = 0.0, p = 0.0, r = 0.0
        for point in points {
            t += point.time
            p += point.position
            r += point.rate
        }
        t /= n
        p /= n
        r /= n
        if let first = points.first, let last = points.last, last.time - first.time >= Self.slopeSpan {
            var stt = 0.0, stp = 0.0
            for point in points {
                stt += (point.time - t) * (point.time - t)
                stp += (point.time - t) * (point.position - p)
            }
            if stt > 0 { r = min(max(stp / stt, 0.8), 1.25) }
        }
        meanTime = t
        meanPosition = p
        rate = r
    }
}
