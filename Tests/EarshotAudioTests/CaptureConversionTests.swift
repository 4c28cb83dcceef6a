import Testing

@testable import EarshotAudio

@Suite("Capture sample conversion")
struct CaptureConversionTests {
    private func mix<T>(_ samples: [T], _ format: AlsaSampleFormat, channels: Int) -> [Float] {
        let frames = samples.count / channels
        var out = [Float](repeating: .nan, count: frames)
        samples.withUnsafeBytes { raw in
            out.withUnsafeMutableBufferPointer { o in
                format.mixToMono(raw.baseAddress!, frames: frames, channels: channels, into: o.baseAddress!)
            }
        }
        return out
    }

    @Test("S16_LE: full scale is ±1, stereo is the average")
    func s16() {
        #expect(mix([Int16.min, 0, 16384, Int16.max], .s16LE, channels: 1) == [-1, 0, 0.5, Float(32767) / 32768])
        #expect(mix([Int16(16384), -16384, 32767, 32767], .s16LE, channels: 2) == [0, Float(32767) / 32768])
    }

    @Test("S32_LE: full scale is ±1, stereo is the average")
    func s32() {
        #expect(mix([Int32.min, 0, 1 << 30], .s32LE, channels: 1) == [-1, 0, 0.5])
        #expect(mix([Int32(1 << 30), 1 << 29], .s32LE, channels: 2) == [0.375])
    }

    @Test("FLOAT_LE: passed through, averaged; NaN and infinity become silence")
    func float() {
        #expect(mix([Float(0.25), -1, 1], .floatLE, channels: 1) == [0.25, -1, 1])
        #expect(mix([Float(0.5), 0.25, .nan, 0.5, .infinity, 0], .floatLE, channels: 2) == [0.375, 0, 0])
    }
}
