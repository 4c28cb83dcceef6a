import EarshotAudio
import EarshotCore
import Testing

@Suite("Resampler")
struct ResamplerTests {
    /// Resamples `input` in one block plus a flush.
    private func resample(_ input: [Float], from inputRate: Double, to outputRate: Double) throws -> [Float] {
        let resampler = try Resampler(inputRate: inputRate, outputRate: outputRate)
        var output: [Float] = []
        input.withUnsafeBufferPointer { resampler.process($0, into: &output) }
        resampler.flush(into: &output)
        return output
    }

    @Test("keeps a 1 kHz tone's pitch, level and length", arguments: [44_100.0, 8_000, 48_000, 22_050])
    func keepsToneAndDuration(inputRate: Double) throws {
        let input = Signal.sine(frequency: 1000, rate: inputRate, count: Int(inputRate * 2))
        let output = try resample(input, from: inputRate, to: 16_000)

        #expect(abs(output.count - 32_000) <= 2, "got \(output.count) samples")
        let middle = Signal.middle(output, rate: 16_000)
        let frequency = Signal.zeroCrossingFrequency(middle, rate: 16_000)
        #expect(abs(frequency - 1000) < 0.5, "measured \(frequency) Hz")
        #expect(abs(Signal.amplitude(middle, at: 1000, rate: 16_000) - 0.5) < 0.01)
        // The output lines up with the input: soxr's filter delay is compensated.
        let expected = Signal.sine(frequency: 1000, rate: 16_000, count: output.count)
        let error = zip(middle, Signal.middle(expected, rate: 16_000)).map { abs($0 - $1) }.max() ?? 1
        #expect(error < 0.01, "largest difference from the ideal tone \(error)")
    }

    @Test("gives the same result however the input is split into blocks", arguments: [1, 7, 1000, 8193])
    func blockSizeDoesNotMatter(blockSize: Int) throws {
        let input = Signal.sine(frequency: 1234, rate: 44_100, count: 30_000)
        let whole = try resample(input, from: 44_100, to: 16_000)

        let resampler = try Resampler(inputRate: 44_100, outputRate: 16_000)
        var output: [Float] = []
        input.withUnsafeBufferPointer { all in
            var start = 0
            while start < all.count {
                let end = min(start + blockSize, all.count)
                resampler.process(UnsafeBufferPointer(rebasing: all[start..<end]), into: &output)
                start = end
            }
        }
        resampler.flush(into: &output)
        #expect(output.count == whole.count)
        let difference = zip(output, whole).map { abs($0 - $1) }.max() ?? 0
        #expect(difference < 1e-5)
    }

    @Test("can resample a new signal after a flush")
    func reusableAfterFlush() throws {
        let first = Signal.sine(frequency: 500, rate: 8_000, count: 8_000)
        let second = Signal.sine(frequency: 700, rate: 8_000, count: 5_000)
        let resampler = try Resampler(inputRate: 8_000, outputRate: 16_000)
        var output: [Float] = []
        first.withUnsafeBufferPointer { resampler.process($0, into: &output) }
        resampler.flush(into: &output)
        output.removeAll()
        second.withUnsafeBufferPointer { resampler.process($0, into: &output) }
        resampler.flush(into: &output)
        #expect(output == (try resample(second, from: 8_000, to: 16_000)))
    }

    @Test("copies samples through unchanged when the rates are equal")
    func passThrough() throws {
        let input = Signal.sine(frequency: 1000, rate: 16_000, count: 1234)
        let resampler = try Resampler(inputRate: 16_000, outputRate: 16_000)
        var output: [Float] = [42]
        input.withUnsafeBufferPointer { resampler.process($0, into: &output) }
        resampler.flush(into: &output)
        #expect(output == [42] + input)
    }

    @Test("ignores empty blocks and appends to what is already there")
    func emptyBlocks() throws {
        let resampler = try Resampler(inputRate: 44_100, outputRate: 16_000)
        var output: [Float] = [1, 2, 3]
        [Float]().withUnsafeBufferPointer { resampler.process($0, into: &output) }
        resampler.flush(into: &output)
        #expect(output == [1, 2, 3])
    }

    @Test("rejects rates that are not positive and finite", arguments: [0.0, -8_000, .nan, .infinity])
    func rejectsBadRates(rate: Double) {
        #expect(throws: EarshotError.self) { try Resampler(inputRate: rate, outputRate: 16_000) }
        #expect(throws: EarshotError.self) { try Resampler(inputRate: 16_000, outputRate: rate) }
        do {
            _ = try Resampler(inputRate: rate, outputRate: 16_000)
        } catch {
            #expect(error.name == "internalError")
        }
    }
}
