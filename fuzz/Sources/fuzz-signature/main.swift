// libFuzzer harness: `.earsig` parsing (`Signature(dataRepresentation:)`), as `earshot` reads a
// signature file and the daemon a MatchSignature payload.
//
// Each input is tried twice: as it is, and with both CRC-32s recomputed, so that mutations reach
// the checks behind the checksums. A signature that opens must encode again and reopen equal.
@testable import EarshotCore
import FuzzSupport

@_cdecl("fuzz_signature_main")
public func main(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    fuzzMain(argc, argv, fuzzSignature, seeds: seeds)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSignature(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    check(bytes)
    if bytes.count >= Signature.headerSize {
        var repaired = bytes
        let body = Array(repaired[Signature.headerSize...])
        patch(&repaired, CRC32.checksum(body), at: 32)
        patch(&repaired, CRC32.checksum(Array(repaired[0..<36])), at: 36)
        check(repaired)
    }
    return 0
}

private func patch(_ bytes: inout [UInt8], _ value: UInt32, at offset: Int) {
    for i in 0..<4 { bytes[offset + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(i))) }
}

private func check(_ bytes: [UInt8]) {
    guard let signature = try? Signature(dataRepresentation: bytes) else { return }
    _ = signature.peakDensity
    let again = signature.dataRepresentation
    guard let reopened = try? Signature(dataRepresentation: again) else {
        fatalError("a signature that opened does not reopen from its own encoding")
    }
    precondition(reopened == signature, "a signature changes through its own encoding")
    _ = try? signature.slice(from: 0, duration: signature.duration / 2)
}

private func seeds() -> [[UInt8]] {
    [(0.5, 5, 1), (3, 20, 2), (10, 10, 3)].map { seconds, perSecond, seed in
        let peaks = seedPeaks(seconds: seconds, perSecond: perSecond, seed: seed).map { Peak(time: $0.time, bin: $0.bin, magnitude: $0.magnitude) }
        return try! Signature(duration: seconds, peaks: peaks).dataRepresentation
    }
}
