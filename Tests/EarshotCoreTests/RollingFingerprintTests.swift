import EarshotTestSupport
import Testing

@testable import EarshotCore

struct RollingFingerprintTests {
    /// The window's signature holds exactly the peaks the whole stream has in that span: trimming
    /// and moving the time origin lose nothing inside the window and shift nothing.
    @Test func windowEqualsTheSameSpanOfTheWholeStream() throws {
        let audio = SyntheticMusic.make(seed: 7, duration: 41)
        let rolling = RollingFingerprint(capacity: 12)
        var rng = SeededRandom(seed: 3)
        var at = 0
        while at < audio.count {
            let n = min(audio.count - at, 64 + Int(rng.next() % 2000))
            audio[at..<(at + n)].withUnsafeBufferPointer { rolling.append($0) }
            at += n
        }
        #expect(abs(rolling.streamDuration - 41) < 1e-9)
        #expect(rolling.windowDuration == 12)

        let whole = Fingerprinter()
        whole.append(audio)
        let all = try Signature(duration: 41, peaks: whole.finish())
        let expected = try all.slice(from: 31, duration: 10)

        let (window, start) = try rolling.signature(lastSeconds: 10)
        #expect(abs(start - 31) < 1e-9)
        #expect(window.duration == 10)
        #expect(window.peaks.count == expected.peaks.count)
        for (a, b) in zip(window.peaks, expected.peaks) {
            #expect(abs(a.time - b.time) <= 0.125 && a.bin == b.bin && a.magnitude == b.magnitude)
        }
    }

    /// Every window of music can be cut, wherever it starts: interpolation moves a peak up to half
    /// a frame, so peaks are not in time order where the window begins, and none may be cut to
    /// a negative time (that signature would be refused, and a session would answer NO_MATCH).
    @Test func everyWindowOfMusicCutsToAValidSignature() throws {
        let audio = SyntheticMusic.make(seed: 11, duration: 60)
        let rolling = RollingFingerprint(capacity: 12)
        let block = 1024
        var at = 0, windows = 0
        while at + block <= audio.count {
            audio[at..<(at + block)].withUnsafeBufferPointer { rolling.append($0) }
            at += block
            guard rolling.streamDuration >= 12 else { continue }
            for length in [12.0, 3.0] {
                let (signature, start) = try rolling.signature(lastSeconds: length)
                #expect(abs(start - (rolling.streamDuration - length)) < 1e-9)
                #expect(signature.peaks.allSatisfy { $0.time >= 0 })
                windows += 1
            }
        }
        #expect(windows >= 1400)
    }

    @Test func memoryStaysBoundedOnALongStream() throws {
        let rolling = RollingFingerprint(capacity: 5)
        let chunk = SyntheticMusic.make(seed: 9, duration: 10)
        for _ in 0..<30 { rolling.append(chunk) }  // 5 minutes
        let (signature, start) = try rolling.signature()
        #expect(signature.duration == 5)
        #expect(abs(start - 295) < 1e-9)
        // Peak times stay inside the window (nothing from before it survives).
        #expect(signature.peaks.allSatisfy { $0.time >= 0 && $0.time < Float(5 / FingerprintParameters.hopDuration) + 1 })
        #expect(signature.peakDensity > 10)
    }

    @Test func windowOfAShortStreamIsWhatWasHeard() throws {
        let rolling = RollingFingerprint(capacity: 12)
        #expect(throws: EarshotError.self) { try rolling.signature() }
        rolling.append(SyntheticMusic.make(seed: 4, duration: 3))
        let (signature, start) = try rolling.signature()
        #expect(start == 0)
        #expect(abs(signature.duration - 3) < 1e-9)
    }

    @Test func silenceGivesSignatureInvalid() {
        let rolling = RollingFingerprint(capacity: 12)
        rolling.append([Float](repeating: 0, count: 48_000))
        #expect {
            try rolling.signature()
        } throws: { error in
            guard case EarshotError.signatureInvalid = error else { return false }
            return true
        }
    }
}
