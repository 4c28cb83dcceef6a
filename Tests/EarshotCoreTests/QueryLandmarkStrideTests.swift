@testable import EarshotCore
import EarshotTestSupport
import Testing

/// The coarse stage's anchor stride (`LandmarkHasher.forEachQueryLandmark(anchorStride:)`) passes
/// over the other anchors before their pairs are made: it must yield exactly the landmarks of
/// every `anchorStride`-th anchor that the full walk yields, in the same order, under any
/// hypothesis and time tolerance.
struct QueryLandmarkStrideTests {
    struct Probe: Equatable {
        var key: UInt32, frame: Int32, fineBin: UInt8, anchor: Int
    }

    static func landmarks(_ peaks: UnsafeBufferPointer<Peak>, timeScale: Float, pitch: Float, frameTolerance: Float,
                          beyond: Float?, anchorStride: Int) -> [Probe] {
        var out: [Probe] = []
        LandmarkHasher.forEachQueryLandmark(peaks, fanOut: LandmarkHasher.queryFanOut, timeScale: timeScale, pitch: pitch,
                                            frameTolerance: frameTolerance, beyond: beyond, anchorStride: anchorStride) { lm, anchor in
            out.append(Probe(key: lm.key, frame: lm.frame, fineBin: lm.fineBin, anchor: anchor))
        }
        return out
    }

    @Test(arguments: [2, 3, 4, 7])
    func aStrideKeepsEveryNthAnchorsLandmarksAndNothingElse(anchorStride: Int) {
        var random = SeededRandom(seed: UInt64(anchorStride))
        var peaks: [Peak] = []
        var time: Float = 0
        for _ in 0..<600 {
            time += Float(random.next() % 600) / 100
            let bin = 16 + Float(random.next() % 24_000) / 100
            peaks.append(Peak(time: time, bin: bin, magnitude: Float(random.next() % 1000) / 100))
        }
        let hypotheses: [(timeScale: Float, pitch: Float, tolerance: Float, beyond: Float?)] = [
            (1, 1, LandmarkHasher.queryFrameTolerance, nil), (1.04, 1.04, LandmarkHasher.queryFrameTolerance, nil),
            (1, 0.944, LandmarkHasher.queryFrameTolerance, nil), (1, 1, 2, LandmarkHasher.queryFrameTolerance),
        ]
        peaks.withUnsafeBufferPointer { p in
            for h in hypotheses {
                let all = Self.landmarks(p, timeScale: h.timeScale, pitch: h.pitch, frameTolerance: h.tolerance,
                                         beyond: h.beyond, anchorStride: 1)
                let strided = Self.landmarks(p, timeScale: h.timeScale, pitch: h.pitch, frameTolerance: h.tolerance,
                                             beyond: h.beyond, anchorStride: anchorStride)
                #expect(all.count > 1000, "the peaks make landmarks to compare")
                #expect(strided == all.filter { $0.anchor % anchorStride == 0 }, "hypothesis \(h)")
            }
        }
    }
}
