// libFuzzer harness: cue import, as `earshot catalog cues import` reads a file: the bytes as an
// HLS playlist (with the playlist's origin and with a given one) and as a cue CSV, and as one
// attribute list. Whatever parses must export (playlist and CSV) and import again to exactly
// the same cues, and an attribute list must render and parse back to itself.
import EarshotAuthoring
import EarshotCore
import Foundation
import FuzzSupport

@_cdecl("fuzz_cues_main")
public func main(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    fuzzMain(argc, argv, fuzzCues, seeds: seeds)
}

/// An hour-long reference; a second, later origin for the exports.
private let referenceDuration = 3600.0
private let givenOrigin = Date(timeIntervalSince1970: 1_714_593_600.25)  // 2024-05-01T20:00:00.25Z

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCues(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    if let cues = try? CuePlaylist.parse(bytes: bytes, referenceDuration: referenceDuration) { checkRoundTrips(cues, from: "playlist") }
    if let cues = try? CuePlaylist.parse(bytes: bytes, referenceDuration: referenceDuration, origin: givenOrigin) {
        checkRoundTrips(cues, from: "playlist with an origin")
    }
    if let cues = try? CueCSV.parse(bytes: bytes, referenceDuration: referenceDuration) { checkRoundTrips(cues, from: "CSV") }
    if let text = String(validating: bytes, as: UTF8.self), let list = try? AttributeList.parse(text) {
        guard let rendered = try? list.render() else { preconditionFailure("a parsed attribute list does not render: \(list)") }
        precondition((try? AttributeList.parse(rendered)) == list, "attribute list round trip changed:\n\(text)\n\(rendered)")
    }
    return 0
}

/// Cues an import accepted: each export must succeed and import back to the same cues.
private func checkRoundTrips(_ cues: [Cue], from source: String) {
    for origin in [CuePlaylist.defaultOrigin, givenOrigin] {
        let text: String
        do { text = try CuePlaylist.render(cues, referenceDuration: referenceDuration, origin: origin) } catch {
            preconditionFailure("\(source): cues that imported do not export as a playlist: \(error)\n\(cues)")
        }
        do {
            let again = try CuePlaylist.parse(text: text, referenceDuration: referenceDuration)
            precondition(again == cues, "\(source): playlist export → import changed the cues:\n\(cues)\n\(again)\n\(text)")
        } catch {
            preconditionFailure("\(source): an exported playlist does not import: \(error)\n\(text)")
        }
    }
    let csv: String
    do { csv = try CueCSV.render(cues, referenceDuration: referenceDuration) } catch {
        preconditionFailure("\(source): cues that imported do not export as CSV: \(error)\n\(cues)")
    }
    do {
        let again = try CueCSV.parse(text: csv, referenceDuration: referenceDuration)
        precondition(again == cues, "\(source): CSV export → import changed the cues:\n\(cues)\n\(again)\n\(csv)")
    } catch {
        preconditionFailure("\(source): an exported CSV does not import: \(error)\n\(csv)")
    }
}

private func seeds() -> [[UInt8]] {
    [
        """
        #EXTM3U
        #EXT-X-VERSION:7
        #EXT-X-TARGETDURATION:10
        #EXT-X-PROGRAM-DATE-TIME:2020-01-02T21:55:40.000Z
        #EXT-X-DATERANGE:ID="pre",CLASS="com.apple.hls.interstitial",START-DATE="2020-01-02T21:55:40.000Z",CUE="PRE,ONCE",X-ASSET-URI="http://example.com/preroll.m3u8"
        #EXTINF:10,
        main1.0.ts
        #EXT-X-DATERANGE:ID="ad1",CLASS="com.apple.hls.interstitial",START-DATE="2020-01-02T21:55:44.000Z",DURATION=15.0,X-ASSET-LIST="http://example.com/ad-list.json",X-RESUME-OFFSET=0,X-RESTRICT="SKIP,JUMP",X-SNAP="OUT,IN",X-COM-EXAMPLE-AD-ID="XYZ123",SCTE35-OUT=0xFC302000000000000000FFF00506FE0000000000000000
        #EXTINF:10,
        main2.0.ts
        #EXT-X-DATERANGE:ID="post",CLASS="com.apple.hls.interstitial",START-DATE="2020-01-02T21:55:40.000Z",CUE="POST",X-ASSET-URI="http://example.com/postroll.m3u8",X-PLAYOUT-LIMIT=30.5,X-CONTENT-MAY-VARY="NO",X-TIMELINE-OCCUPIES="RANGE",X-TIMELINE-STYLE="PRIMARY",X-SKIP-CONTROL-OFFSET=5,X-SKIP-CONTROL-DURATION=10,X-SKIP-CONTROL-LABEL-ID="SKIP_AD"
        #EXT-X-ENDLIST

        """,
        """
        #EXTM3U
        #EXT-X-PROGRAM-DATE-TIME:2024-05-01T22:00:00+02:00
        #EXT-X-DATERANGE:ID="splice",START-DATE="2024-05-01T20:00:10.5Z",PLANNED-DURATION=59.993,SCTE35-OUT=0xFC002F
        #EXT-X-DATERANGE:ID="splice",DURATION=59.993,SCTE35-IN=0xFC002A
        #EXT-X-DATERANGE:ID="ch1",CLASS="chapter",START-DATE="2024-05-01T20:00:00.1Z",END-ON-NEXT=YES,X-COM-N=-1.25,X-COM-K=LIVE,X-COM-R=1920x1080
        #EXT-X-DATERANGE:ID="ch2",CLASS="chapter",START-DATE="2024-05-01T20:01:00Z",END-DATE="2024-05-01T20:01:30.123456789Z"
        #EXTINF:3600,
        seg.ts

        """,
        "#EXTM3U\r\n#EXT-X-DATERANGE:ID=\"a\",START-DATE=\"2024-05-01T20:00:01Z\"\r\n",
        #"""
        id,class,start,duration,planned-duration,end-on-next,asset-uri,asset-list,resume-offset,playout-limit,restrict,cue,snap,content-may-vary,timeline-occupies,timeline-style,skip-control-offset,skip-control-duration,skip-control-label-id,X-COM-TEXT,SCTE35-OUT,X-COM-NUMBER,X-COM-KIND
        pre,com.apple.hls.interstitial,0,,,,https://ads.example/pre.m3u8,,,,,"PRE,ONCE",,,,,,,,,,,
        ad1,com.apple.hls.interstitial,4,15.0,,,,https://ads.example/list.json,0,30.5,"SKIP,JUMP",,"OUT,IN",NO,RANGE,PRIMARY,5,10,SKIP_AD,"""ad, one""",0xFC30,-1.5,LIVE
        ch1,chapter,0.30000000000000004,,,YES,,,,,,,,YES,POINT,HIGHLIGHT,,,,,,,

        """#,
        "id,start,DURATION,X-A\r\na,1e-7,1,\"\"\"\"\"\"\r\n",
        #"ID="x",INT=42,HEX=0xFC3A,FLOAT=12.5,SIGNED=-0.25,TEXT="a, b=c",ENUM=YES,RES=1920x1080"#,
    ].map { Array($0.utf8) }
}
