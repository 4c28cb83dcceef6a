#if canImport(Glibc)
import Glibc
#endif

// SwiftPM links a debug (testable) executable with `main` defined as `<module>_main`, which
// replaces libFuzzer's own `main`; so each harness defines `<module>_main` and hands over to
// libFuzzer's driver from here.

public typealias FuzzTarget = @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32

@_extern(c, "LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ target: FuzzTarget
) -> Int32

/// Runs libFuzzer with the process's arguments on `target`.
public func runLibFuzzer(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ target: FuzzTarget) -> Int32 {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv, target)
}

/// Runs libFuzzer, or, when `EARSHOT_FUZZ_SEEDS` names a folder, writes `seeds()` into it as
/// `seed-<n>` files and returns (scripts/fuzz.sh makes each harness's seed corpus this way).
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ target: FuzzTarget,
                     seeds: () -> [[UInt8]]) -> Int32 {
    guard let folder = getenv("EARSHOT_FUZZ_SEEDS").map({ String(cString: $0) }) else {
        return runLibFuzzer(argc, argv, target)
    }
    for (n, seed) in seeds().enumerated() {
        guard let file = fopen("\(folder)/seed-\(n)", "wb") else { fatalError("cannot write seeds into \(folder)") }
        _ = seed.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
        fclose(file)
    }
    return 0
}

/// Peaks spread over `seconds` of audio in the analysed band, for seed signatures.
public func seedPeaks(seconds: Double, perSecond: Int, seed: Int) -> [(time: Float, bin: Float, magnitude: Float)] {
    var state = UInt64(truncatingIfNeeded: seed) &* 0x9e37_79b9_7f4a_7c15 | 1
    func next() -> UInt64 {
        state ^= state << 13; state ^= state >> 7; state ^= state << 17
        return state
    }
    let frames = seconds * 125
    let count = Int(seconds * Double(perSecond))
    return (0..<count).map { i in
        (time: Float(Double(i) * frames / Double(count)), bin: Float(20 + next() % 230) + Float(next() % 4) / 4,
         magnitude: Float(next() % 1000) / 10)
    }.sorted { $0.time < $1.time }
}
