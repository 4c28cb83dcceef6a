// libFuzzer harness: CSV media-item import, as `earshot catalog build/update --items` reads it:
// `MediaItemCSV.parse(bytes:)`, then `assign` over one input, several inputs and an existing
// catalog, then `render` and a second parse of what was rendered, which must give the same rows.
import EarshotAuthoring
import EarshotCore
import FuzzSupport

@_cdecl("fuzz_csv_main")
public func main(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    fuzzMain(argc, argv, fuzzCSV, seeds: seeds)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCSV(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    guard let rows = try? MediaItemCSV.parse(bytes: bytes) else { return 0 }
    _ = try? MediaItemCSV.assign(rows, inputs: ["songs/a.wav"])
    _ = try? MediaItemCSV.assign(rows, inputs: ["songs/a.wav", "b.earsig", "c.d.flac"])
    _ = try? MediaItemCSV.assign(rows, inputs: ["new.wav"], existingReferenceCount: 3)
    // `render` promises text that `parse` reads back into the same rows (export → import).
    let rendered = MediaItemCSV.render(rows)
    guard let again = try? MediaItemCSV.parse(text: rendered) else {
        preconditionFailure("render wrote CSV that parse refuses:\n\(rendered)")
    }
    precondition(again.count == rows.count, "render/parse round trip: \(rows.count) rows became \(again.count)")
    for (a, b) in zip(rows, again) {
        precondition(a.file == b.file && a.reference == b.reference && a.item == b.item,
                     "render/parse round trip changed a row:\n\(a)\n\(b)\nrendered:\n\(rendered)")
    }
    for row in rows.prefix(4) { _ = MediaItemCSV.fields(of: row.item) }
    return 0
}

private func seeds() -> [[UInt8]] {
    [
        """
        signature,id,title,subtitle,artist,genres,isrc,artworkURL,videoURL,webURL,explicitContent,creationDate,timeRanges,frequencySkewRanges
        ep.wav,q1,Title,Sub,Artist, Drama ; Comedy ;,USABC2400001,https://e.com/a.png,https://e.com/v.m3u8,https://e.com,yes,2024-05-01,14-21;31..<40.5,-0.02..<-0.01;0.01-0.02

        """,
        """
        id,creationDate
        a,2024-05-01T20:15:00Z
        b,2024-05-01T22:15:00+02:00
        c,2024-05-01T20:15:00.250Z

        """,
        #"""
        id,custom.question,custom.choices,custom.points,custom.hint,custom.final,x-Cue,custom.nothing
        q,"{""text"":""2+2?"",""answer"":4}","[""A"",""B"",3]",2.5,"""think""",true,"{""at"":14}",null

        """#,
        "reference,signature,title\r\n0,,\"Intro, \"\"live\"\"\"\r\n,007-outro.earsig,Outro\r\n",
        "file,title\na.wav,A\nb,B\nc.d.flac,C\n",
    ].map { Array($0.utf8) }
}
