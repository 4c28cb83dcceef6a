import EarshotTestSupport
import Foundation
import Testing

@testable import EarshotCore

struct SignatureFormatTests {
    let signature: Signature = try! SyntheticSignature.of(SyntheticMusic.make(seed: 7, duration: 8))

    @Test func roundTripKeepsPeaksWithinQuantisation() throws {
        let data = signature.dataRepresentation
        let back = try Signature(dataRepresentation: data)
        #expect(back.duration == signature.duration)
        #expect(back.peaks.count == signature.peaks.count)
        for (a, b) in zip(signature.peaks, back.peaks) {
            #expect(abs(a.time - b.time) <= 1 / 16 + 1e-4)
            #expect(abs(a.bin - b.bin) <= 1 / 32 + 1e-4)
        }
        // A second round trip is exact.
        #expect(back.dataRepresentation == data)
    }

    @Test func holdsNoAudio() {
        // Irreversible: only sparse peaks (far fewer values than samples) are kept.
        let data = signature.dataRepresentation
        #expect(data.count < Int(signature.duration * 200))
        #expect(signature.peakDensity < 40)
    }

    @Test func longGapsAreCoded() throws {
        let peaks = [Peak(time: 1, bin: 40, magnitude: 0), Peak(time: 20_000, bin: 41, magnitude: 0)]
        let s = try Signature(duration: 200, peaks: peaks)
        let back = try Signature(dataRepresentation: s.dataRepresentation)
        #expect(back.peaks.map(\.time) == [1, 20_000])
    }

    @Test func rejectsTruncation() {
        let data = signature.dataRepresentation
        for cut in [0, 7, 20, 39, 40, data.count - 1] {
            #expect(throws: EarshotError.self) { try Signature(dataRepresentation: Array(data[0..<cut])) }
        }
        do {
            _ = try Signature(dataRepresentation: Array(data[0..<(data.count - 4)]))
            Issue.record("truncated signature was accepted")
        } catch {
            #expect(error.code == 200)
            #expect(error.message.contains("truncated"))
        }
    }

    @Test func rejectsEveryBitFlipInHeaderAndSomeInBody() {
        let data = signature.dataRepresentation
        var positions = Array(0..<40)
        positions += stride(from: 40, to: data.count, by: max(1, data.count / 50)).map { $0 }
        for position in positions {
            var corrupt = data
            corrupt[position] ^= 0x10
            #expect(throws: EarshotError.self, "flip at byte \(position) accepted") {
                try Signature(dataRepresentation: corrupt)
            }
        }
    }

    @Test func rejectsForeignAndFutureFiles() {
        var foreign = Array("RIFF....WAVEfmt ".utf8) + [UInt8](repeating: 0, count: 64)
        #expect(throws: EarshotError.signatureInvalid("not an Earshot signature (bad magic number)")) {
            try Signature(dataRepresentation: foreign)
        }
        foreign = signature.dataRepresentation
        foreign[8] = 9  // version 9
        do {
            _ = try Signature(dataRepresentation: foreign)
            Issue.record("future version accepted")
        } catch {
            #expect(error.message.contains("version 9"))
        }
    }

    @Test func silenceIsInvalid() {
        #expect(throws: EarshotError.self) { try SyntheticSignature.of([Float](repeating: 0, count: 48_000)) }
        #expect(throws: EarshotError.self) { try Signature(duration: 3, peaks: []) }
    }

    @Test func sliceCutsAndRebases() throws {
        let part = try signature.slice(from: 2, duration: 3)
        #expect(abs(part.duration - 3) < 1e-9)
        #expect(part.peaks.allSatisfy { $0.time >= 0 && Double($0.time) < 3 / FingerprintParameters.hopDuration })
        do {
            _ = try signature.slice(from: 20, duration: 3)
            Issue.record("slice past the end accepted")
        } catch {
            #expect(error.message.contains("out of a 8.00 s signature"))
        }
    }
}
