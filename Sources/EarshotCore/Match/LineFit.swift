/// Finds the straight line `y = intercept + slope·x` that most points lie on (within `tolerance`)
/// — the diagonal that aligned hits form in the (query time, reference time) plane, Wang 2003.
///
/// A Hough-style search over slopes, each scored with a fixed-width intercept histogram, then a
/// least-squares refinement on the inliers. All scratch space is owned and reused.
struct LineFit {
    struct Line { var slope: Double; var intercept: Double; var inliers: Int }

    private var histogram = [UInt16](repeating: 0, count: 2048)
    static let tolerance: Double = 1.5

    /// `xs`/`ys` in frames. `interceptCenter` is a rough intercept; lines are searched within
    /// ±`interceptRadius` of it and slopes within `slopes`.
    mutating func fit(xs: UnsafeBufferPointer<Double>, ys: UnsafeBufferPointer<Double>, interceptCenter: Double,
                      interceptRadius: Double, slopes: ClosedRange<Double>) -> Line {
        var best = coarseSearch(xs, ys, interceptCenter, interceptRadius, slopes, step: 0.005)
        let fineRange = max(slopes.lowerBound, best.slope - 0.006)...min(slopes.upperBound, best.slope + 0.006)
        let fine = coarseSearch(xs, ys, interceptCenter, interceptRadius, fineRange, step: 0.0005)
        if fine.inliers >= best.inliers { best = fine }
        // Least squares on the inliers, twice (the second pass sees the better line's inliers).
        // With one slope allowed (the peak search's) the intercept stays on the search's grid of
        // `tolerance`: fitting it as the inliers' mean offset finds a few more queries and as many
        // more false positives (benchmarks/studies/peak-search.md).
        for _ in 0..<2 {
            var n = 0.0, sx = 0.0, sy = 0.0, sxx = 0.0, sxy = 0.0
            for i in 0..<xs.count where abs(ys[i] - best.intercept - best.slope * xs[i]) <= Self.tolerance {
                n += 1; sx += xs[i]; sy += ys[i]; sxx += xs[i] * xs[i]; sxy += xs[i] * ys[i]
            }
            let det = n * sxx - sx * sx
            guard n >= 3, det > 1e-6 * n * n else { break }
            let slope = (n * sxy - sx * sy) / det
            guard slopes.contains(slope) else { break }
            let candidate = Line(slope: slope, intercept: (sy - slope * sx) / n, inliers: 0)
            let count = countInliers(xs, ys, candidate)
            if count >= best.inliers { best = Line(slope: candidate.slope, intercept: candidate.intercept, inliers: count) }
        }
        return best
    }

    private func countInliers(_ xs: UnsafeBufferPointer<Double>, _ ys: UnsafeBufferPointer<Double>, _ line: Line) -> Int {
        var count = 0
        for i in 0..<xs.count where abs(ys[i] - line.intercept - line.slope * xs[i]) <= Self.tolerance { count += 1 }
        return count
    }

    private mutating func coarseSearch(_ xs: UnsafeBufferPointer<Double>, _ ys: UnsafeBufferPointer<Double>, _ center: Double,
                                       _ radius: Double, _ slopes: ClosedRange<Double>, step: Double) -> Line {
        let width = Self.tolerance  // histogram cell; a line's inliers fall in two adjacent cells
        let cells = min(histogram.count - 1, Int(2 * radius / width) + 2)
        let origin = center - radius
        var best = Line(slope: 1, intercept: center, inliers: 0)
        var slope = slopes.lowerBound
        while slope <= slopes.upperBound + 1e-9 {
            histogram.withUnsafeMutableBufferPointer { h in
                for c in 0...cells { h[c] = 0 }
                // A point's cell by its position, not truncated toward zero: a point just below
                // the origin is in no cell (truncating would put it in cell 0, where the line found
                // could claim it without holding it).
                let limit = Double(cells)
                for i in 0..<xs.count {
                    let position = ((ys[i] - slope * xs[i]) - origin) / width
                    if position >= 0, position < limit { h[Int(position)] &+= 1 }
                }
                for c in 0..<cells {
                    let count = Int(h[c]) + Int(h[c + 1])
                    if count > best.inliers {
                        best = Line(slope: slope, intercept: origin + Double(c + 1) * width, inliers: count)
                    }
                }
            }
            slope += step
        }
        return best
    }
}
