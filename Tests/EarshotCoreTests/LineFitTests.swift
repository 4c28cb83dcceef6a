import Testing

@testable import EarshotCore

/// Fitting the line that aligned hits form (`LineFit`).
struct LineFitTests {
    private func fit(_ points: [(Double, Double)], center: Double, radius: Double, slopes: ClosedRange<Double>) -> LineFit.Line {
        var fit = LineFit()
        let xs = points.map(\.0), ys = points.map(\.1)
        return xs.withUnsafeBufferPointer { x in
            ys.withUnsafeBufferPointer { y in
                fit.fit(xs: x, ys: y, interceptCenter: center, interceptRadius: radius, slopes: slopes)
            }
        }
    }

    private func held(_ line: LineFit.Line, _ points: [(Double, Double)]) -> Int {
        points.filter { abs($0.1 - line.intercept - line.slope * $0.0) <= LineFit.tolerance }.count
    }

    @Test func aLineHoldsTheInliersItCounts() {
        var points: [(Double, Double)] = (0..<12).map { i in
            let x = Double(i) * 100
            return (x, 500 + 1.02 * x)
        }
        points += [(50, 900), (700, 100)]
        let line = fit(points, center: 500, radius: 100, slopes: 0.94...1.06)
        #expect(abs(line.slope - 1.02) < 0.001)
        #expect(abs(line.intercept - 500) < 1)
        #expect(line.inliers == 12)
        #expect(held(line, points) == line.inliers)
    }

    /// Points just below the searched intercepts are in no cell of the search: truncating their
    /// position toward zero put them in the first, whose line then claimed them without holding
    /// them (and the matcher, finding none of them on it, trapped on an empty median).
    @Test func pointsBelowTheSearchedInterceptsAreNotClaimed() {
        // Intercepts searched from 90 (100 ± 10); the points lie at 89.0 and 89.2, 1.0 and 0.8 below.
        let points: [(Double, Double)] = [(0, 89.0), (400, 489.2)]
        let line = fit(points, center: 100, radius: 10, slopes: 1...1)
        #expect(line.inliers == held(line, points))
        #expect(line.inliers == 0)
    }
}
