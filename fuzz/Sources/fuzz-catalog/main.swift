// libFuzzer harness: `.earcat` parsing (`MappedCatalog(bytes:verification:)`, `.structure` as the
// lazy open and `.full` as every catalog is checked when loaded), then every lookup on what
// opened: postings for keys from the input, reference lookups, media items and signatures.
//
// Each input is tried as it is and with its checksums recomputed (the header's and every
// in-bounds section's), so that mutations reach the checks behind the checksums.
@testable import EarshotCore
import FuzzSupport

@_cdecl("fuzz_catalog_main")
public func main(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    fuzzMain(argc, argv, fuzzCatalog, seeds: seeds)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCatalog(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    exercise(bytes, .structure)
    let repaired = repairingChecksums(bytes)
    exercise(repaired, .structure)
    exercise(repaired, .full)
    return 0
}

private func exercise(_ bytes: [UInt8], _ verification: MappedCatalog.Verification) {
    guard let catalog = try? MappedCatalog(bytes: bytes, verification: verification) else { return }
    // Keys: the first bytes of the input, the bucket edges, and every value of the top bits.
    var keys: [UInt32] = [0, 1, UInt32.max, 0x8000_0000, 0x7fff_ffff]
    for i in stride(from: 0, to: min(bytes.count, 64) - 3, by: 4) {
        keys.append(UInt32(bytes[i]) | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2]) << 16 | UInt32(bytes[i + 3]) << 24)
    }
    // Every value of the top bits a format 1 directory reads (of 32) and a format 2 one (of 21).
    for top in 0..<UInt32(64) { keys.append(top << 26 | 0x1234) }
    for top in 0..<UInt32(64) { keys.append(top << 15 | 0x1234) }
    var sum: UInt64 = 0
    for key in keys { catalog.forEachPosting(of: key) { sum &+= UInt64($0) } }
    for frame in [-1, 0, catalog.timelineFrames / 2, catalog.timelineFrames - 1, catalog.timelineFrames, Int.max / 2] {
        if let index = catalog.referenceIndex(containing: frame) { precondition(index < catalog.referenceCount) }
    }
    for index in 0..<min(catalog.referenceCount, 16) {
        _ = catalog.mediaItems(ofReference: index)
        _ = try? catalog.signature(ofReference: index)
    }
    _ = catalog.totalDuration
    blackHole(sum)
}

private func repairingChecksums(_ input: [UInt8]) -> [UInt8] {
    var bytes = input
    guard bytes.count >= CatalogLayout.headerSize else { return bytes }
    let sections = min(Int(bytes[12]) | Int(bytes[13]) << 8, CatalogLayout.Section.allCases.count)
    let tableEnd = CatalogLayout.headerSize + sections * CatalogLayout.sectionEntrySize
    guard bytes.count >= tableEnd else { return bytes }
    for i in 0..<sections {
        let entry = CatalogLayout.headerSize + i * CatalogLayout.sectionEntrySize
        let offset = load64(bytes, entry + 8), length = load64(bytes, entry + 16)
        guard offset <= UInt64(bytes.count), length <= UInt64(bytes.count) - offset else { continue }
        patch(&bytes, CRC32.checksum(Array(bytes[Int(offset)..<Int(offset + length)])), at: entry + 24)
    }
    let crc = bytes.withUnsafeBytes { raw in
        CRC32.checksum(UnsafeRawBufferPointer(rebasing: raw[CatalogLayout.headerSize..<tableEnd]),
                       continuing: CRC32.checksum(UnsafeRawBufferPointer(rebasing: raw[0..<CatalogLayout.headerChecksummed])))
    }
    patch(&bytes, crc, at: CatalogLayout.headerChecksummed)
    return bytes
}

private func load64(_ bytes: [UInt8], _ offset: Int) -> UInt64 {
    (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[offset + $1]) << (8 * UInt64($1)) }
}

private func patch(_ bytes: inout [UInt8], _ value: UInt32, at offset: Int) {
    for i in 0..<4 { bytes[offset + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(i))) }
}

@inline(never) private func blackHole(_ value: UInt64) { if value == 0x5eed_5eed_5eed_5eed { print("") } }

private func seeds() -> [[UInt8]] {
    func signature(_ seconds: Double, _ seed: Int) -> Signature {
        let peaks = seedPeaks(seconds: seconds, perSecond: 10, seed: seed).map { Peak(time: $0.time, bin: $0.bin, magnitude: $0.magnitude) }
        return try! Signature(duration: seconds, peaks: peaks)
    }
    var one = CustomCatalog()
    try! one.addReferenceSignature(signature(4, 1), representing: [MediaItem(id: "a", title: "A")])
    var two = CustomCatalog()
    try! two.addReferenceSignature(signature(6, 2), representing: [
        MediaItem(id: "q1", title: "Question", artist: "Quiz", genres: ["Drama", "Comedy"], explicitContent: true,
                  timeRanges: [1..<2.5], frequencySkewRanges: [-0.01..<0.01],
                  customProperties: ["points": .number(2), "hint": .string("think"), "choices": .array([.string("A"), .bool(true)])]),
        MediaItem(id: "q2"),
    ])
    try! two.addReferenceSignature(signature(3, 3), representing: [MediaItem(id: "b", webURL: "https://example.com")])
    // Both formats this build reads: format 1 as earlier releases wrote it.
    return [try! one.dataRepresentation(), try! two.dataRepresentation(), try! CatalogWriter.encode(two, version: 1)]
}
