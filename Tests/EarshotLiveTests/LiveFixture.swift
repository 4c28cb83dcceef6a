import EarshotCore
import EarshotTestSupport

/// A small catalog of synthetic music (made here, no fixtures) shared by the live tests.
final class LiveFixture: @unchecked Sendable {
    static let shared = LiveFixture()
    /// Reference audio, mono at 16 kHz.
    let audio: [[Float]]
    let catalog: MappedCatalog

    private init() {
        audio = (0..<3).map { SyntheticMusic.make(seed: UInt64(70 + $0), duration: 90) }
        var catalog = CustomCatalog()
        for (i, samples) in audio.enumerated() {
            try! catalog.addReferenceSignature(try! SyntheticSignature.of(samples),
                                               representing: [MediaItem(id: "ref\(i)", title: "Reference \(i)")])
        }
        self.catalog = try! MappedCatalog(bytes: try! catalog.dataRepresentation())
    }

    /// `seconds` of reference `index` from `start`, as 16-bit stereo at 44.1 kHz (a typical
    /// capture format), made by repeating each 16 kHz sample through linear interpolation.
    func stereo44k(reference index: Int, start: Double, seconds: Double) -> [Int16] {
        let source = audio[index]
        let rate = 44_100.0
        let n = Int(seconds * rate)
        var out = [Int16](repeating: 0, count: 2 * n)
        for i in 0..<n {
            let t = (start + Double(i) / rate) * 16_000
            let k = Int(t), f = Float(t - Double(k))
            let a = source[min(k, source.count - 1)], b = source[min(k + 1, source.count - 1)]
            let v = Int16(max(-32767, min(32767, (a + (b - a) * f) * 32767)))
            out[2 * i] = v
            out[2 * i + 1] = v
        }
        return out
    }
}
