import EarshotCore
import EarshotTestSupport
import Foundation
import Testing

@testable import EarshotAudio

struct SignatureGeneratorTests {
    let music = SyntheticMusic.make(seed: 3, duration: 6)

    @Test func contiguousTimesAreAccepted() throws {
        let g = SignatureGenerator()
        try g.append(PCMBuffer(float32: Array(music[0..<16_000]), sampleRate: 16_000), at: 100)
        try g.append(PCMBuffer(float32: Array(music[16_000..<32_000]), sampleRate: 16_000), at: 101)
        try g.append(PCMBuffer(float32: Array(music[32_000..<48_000]), sampleRate: 16_000))  // no time: contiguous
        #expect(abs(try g.signature().duration - 3) < 1e-9)
    }

    @Test(arguments: [(1.5, "gap"), (0.5, "overlap")])
    func discontinuityIsReported(nextTime: Double, kind: String) throws {
        let g = SignatureGenerator()
        try g.append(PCMBuffer(float32: Array(music[0..<16_000]), sampleRate: 16_000), at: 0)
        do {
            try g.append(PCMBuffer(float32: Array(music[16_000..<32_000]), sampleRate: 16_000), at: nextTime)
            Issue.record("\(kind) accepted")
        } catch {
            #expect(error.code == 101)
            #expect(error.message.contains(kind))
        }
    }

    @Test func formatMustNotChange() throws {
        let g = SignatureGenerator()
        try g.append(PCMBuffer(float32: Array(music[0..<16_000]), sampleRate: 16_000))
        #expect(throws: EarshotError.self) { try g.append(PCMBuffer(float32: Array(music[0..<44_100]), sampleRate: 44_100)) }
    }

    @Test func silenceIsSignatureInvalid() throws {
        let g = SignatureGenerator()
        try g.append(PCMBuffer(int16: [Int16](repeating: 0, count: 48_000), sampleRate: 48_000))
        #expect(throws: EarshotError.self) { try g.signature() }
        #expect(throws: EarshotError.self) { try SignatureGenerator().signature() }
    }

    @Test func unsupportedBuffersAreRejected() {
        #expect(throws: EarshotError.self) { try PCMBuffer(float32: [0, 0, 0], sampleRate: 16_000, channelCount: 2) }
        #expect(throws: EarshotError.self) { try PCMBuffer(float32: [0], sampleRate: 4_000) }
        #expect(throws: EarshotError.self) { try PCMBuffer(float32: [0], sampleRate: 200_000) }
        let g = SignatureGenerator()
        #expect(throws: EarshotError.self) { try g.append(PCMBuffer(float32: [0, .nan], sampleRate: 16_000)) }
    }

    /// Any accepted rate and layout gives (nearly) the same peaks as 16 kHz mono float input.
    @Test(arguments: [8_000.0, 22_050, 44_100, 48_000, 96_000])
    func anyRateAndLayoutGivesTheSameSignature(rate: Double) throws {
        let reference = try SyntheticSignature.of(music)
        // Make a stereo int16 version at `rate` of the same audio.
        let resampler = try Resampler(inputRate: 16_000, outputRate: rate)
        var converted: [Float] = []
        music.withUnsafeBufferPointer { resampler.process($0, into: &converted) }
        resampler.flush(into: &converted)
        var stereo = [Int16]()
        for s in converted { let v = Int16(max(-32767, min(32767, s * 32767))); stereo += [v, v] }
        let g = SignatureGenerator()
        try g.append(PCMBuffer(int16: stereo, sampleRate: rate, channelCount: 2))
        let signature = try g.signature()
        #expect(abs(signature.duration - reference.duration) < 0.01)
        // Peaks below 4 kHz survive an 8 kHz round trip; count those found again within a bin/frame.
        let found = reference.peaks.filter { p in
            signature.peaks.contains { abs($0.time - p.time) <= 1 && abs($0.bin - p.bin) <= 1 }
        }.count
        #expect(Double(found) >= 0.8 * Double(reference.peaks.count), "\(found)/\(reference.peaks.count) peaks at \(rate) Hz")
    }
}
