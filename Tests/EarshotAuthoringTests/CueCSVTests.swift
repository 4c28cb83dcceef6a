import EarshotAuthoring
import EarshotCore
import Testing

@Suite("Cue CSV")
struct CueCSVTests {
    private func parse(_ text: String, duration: Double = 600) throws -> [Cue] {
        try CueCSV.parse(text: text, referenceDuration: duration)
    }

    private func parseError(_ text: String, duration: Double = 600) -> String? {
        do {
            _ = try CueCSV.parse(text: text, referenceDuration: duration)
            return nil
        } catch {
            guard case .catalogInvalid(let message) = error else { return "wrong case: \(error)" }
            return message
        }
    }

    @Test func readsTheDocumentedColumns() throws {
        let cues = try parse(#"""
            id,class,start,duration,planned-duration,end-on-next,asset-uri,asset-list,resume-offset,playout-limit,restrict,cue,snap,content-may-vary,timeline-occupies,timeline-style,skip-control-offset,skip-control-duration,skip-control-label-id,X-COM-TEXT,SCTE35-OUT,X-COM-NUMBER,X-COM-KIND
            pre,com.apple.hls.interstitial,0,,,,https://ads.example/pre.m3u8,,,,,"PRE,ONCE",,,,,,,,,,,
            ad1,com.apple.hls.interstitial,4,15.0,,,,https://ads.example/list.json,0,30.5,"SKIP,JUMP",,"OUT,IN",NO,RANGE,PRIMARY,5,10,SKIP_AD,"""ad, one""",0xFC30,-1.5,LIVE
            ch1,chapter,0,,,YES,,,,,,,,,,,,,,,,,

            """#)
        #expect(cues.map(\.id) == ["pre", "ch1", "ad1"])
        #expect(cues[0] == Cue(id: "pre", cueClass: Cue.interstitialClass, start: 0, assetURI: "https://ads.example/pre.m3u8", flags: [.pre, .once]))
        #expect(cues[1] == Cue(id: "ch1", cueClass: "chapter", start: 0, endOnNext: true))
        #expect(cues[2] == Cue(
            id: "ad1", cueClass: Cue.interstitialClass, start: 4, duration: 15, assetList: "https://ads.example/list.json", resumeOffset: 0,
            playoutLimit: 30.5, restrictions: [.skip, .jump], snap: [.out, .in], contentMayVary: false, timelineOccupies: .range,
            timelineStyle: .primary, skipControlOffset: 5, skipControlDuration: 10, skipControlLabelID: "SKIP_AD",
            attributes: [
                "X-COM-TEXT": CueAttribute(.quotedString, "ad, one"), "SCTE35-OUT": CueAttribute(.hexadecimal, "0xFC30"),
                "X-COM-NUMBER": CueAttribute(.decimal, "-1.5"), "X-COM-KIND": CueAttribute(.enumerated, "LIVE"),
            ]))
    }

    @Test func fewColumnsAttributeNamesAsColumnsAndLineEnds() throws {
        let cues = try parse("\u{FEFF}START,start,ID,DURATION\r\n1,2.5,a,3\r\n\r\n0x1,0,b,\r\n")
        // "START" is an extra attribute; "ID" and "DURATION" name their columns.
        #expect(cues == [
            Cue(id: "b", start: 0, attributes: ["START": CueAttribute(.hexadecimal, "0x1")]),
            Cue(id: "a", start: 2.5, duration: 3, attributes: ["START": CueAttribute(.decimal, "1")]),
        ])
        // Text cells are taken as written; other cells without surrounding spaces.
        let spaced = try parse("id,start,cue,X-A\n  padded id , 7 , PRE ,\"  \"\"x\"\" \"\n")
        #expect(spaced == [Cue(id: "  padded id ", start: 7, flags: [.pre], attributes: ["X-A": CueAttribute(.quotedString, "x")])])
    }

    @Test func exportThenImportGivesTheSameCues() throws {
        let expected = try CueSchedule(CuePlaylistTests.everything, referenceDuration: 600).cues
        let text = try CueCSV.render(CuePlaylistTests.everything, referenceDuration: 600)
        #expect(try parse(text) == expected, "\(text)")
        // And the playlist of what the CSV gave.
        #expect(try CuePlaylist.parse(text: CuePlaylist.render(try parse(text), referenceDuration: 600), referenceDuration: 600) == expected)
    }

    @Test func exportedLayout() throws {
        let text = try CueCSV.render([
            Cue(id: "ad, 1", cueClass: Cue.interstitialClass, start: 4, duration: 15, assetURI: "https://a.example/x.m3u8", restrictions: [.skip, .jump],
                attributes: ["X-COM-B": CueAttribute(.quotedString, "q"), "X-COM-A": CueAttribute(.hexadecimal, "0x1F")]),
            Cue(id: "ch", cueClass: "chapter", start: 0.1 + 0.2, endOnNext: true, contentMayVary: true),
        ], referenceDuration: 60)
        #expect(text == #"""
            id,class,start,duration,planned-duration,end-on-next,asset-uri,asset-list,resume-offset,playout-limit,restrict,cue,snap,content-may-vary,timeline-occupies,timeline-style,skip-control-offset,skip-control-duration,skip-control-label-id,X-COM-A,X-COM-B
            ch,chapter,0.30000000000000004,,,YES,,,,,,,,YES,,,,,,,
            "ad, 1",com.apple.hls.interstitial,4,15,,,https://a.example/x.m3u8,,,,"SKIP,JUMP",,,,,,,,,0x1F,"""q"""

            """#)
        #expect(CueCSV.columnNames.count == 19)
        #expect(try CueCSV.render([], referenceDuration: 1) == CueCSV.columnNames.joined(separator: ",") + "\n")
    }

    @Test func exportRefusesWhatWouldNotReadBack() throws {
        func renderError(_ cue: Cue) -> String? {
            do {
                _ = try CueCSV.render([cue], referenceDuration: 600)
                return nil
            } catch {
                return error.message
            }
        }
        #expect(renderError(Cue(id: "a\nb", start: 1)) == #"cue a\nb: the id "a\nb" contains a control character (U+000A): names are printable text"#)
        #expect(renderError(Cue(id: "a", start: 1, skipControlLabelID: "")) == "cue a: column skip-control-label-id: the value is empty; leave it out instead")
        #expect(renderError(Cue(id: "a", start: 1, attributes: ["X-A": CueAttribute(.enumerated, "1.5")]))
            == #"cue a: X-A: "1.5" does not read as enumerated-string (it reads as decimal-floating-point)"#)
        #expect(renderError(Cue(id: "a", start: 1, attributes: ["START-DATE": CueAttribute(.quotedString, "x")]))
            == "cue a: START-DATE is a cue field, not an extra attribute")
        #expect(renderError(Cue(id: "", start: 1)) == "cue (no id): the id is empty")
    }

    // MARK: Hostile input: the exact error and line

    @Test func headerErrors() throws {
        #expect(parseError("") == "line 1: the file is empty; a header row is required")
        #expect(parseError("\n\n") == "line 1: the file is empty; a header row is required")
        #expect(parseError("id,start,titel\n") == #"line 1, column 3: unknown column "titel"; the columns are id, class, start, duration, planned-duration, end-on-next, asset-uri, asset-list, resume-offset, playout-limit, restrict, cue, snap, content-may-vary, timeline-occupies, timeline-style, skip-control-offset, skip-control-duration, skip-control-label-id, and extra attributes named as the attribute in upper case (X-COM-EXAMPLE)"#)
        #expect(parseError("id,start,x-com-a\n")?.hasPrefix(#"line 1, column 3: unknown column "x-com-a";"#) == true)
        #expect(parseError("Id,start\n")?.hasPrefix(#"line 1, column 1: unknown column "Id";"#) == true)
        #expect(parseError("id,start,,duration\n") == "line 1, column 3: the header has an empty column name")
        #expect(parseError("id,start,duration,DURATION\n") == "line 1, column 4: the column duration appears twice")
        #expect(parseError("id,start,START-DATE\n") == "line 1, column 3: START-DATE is not a column: give start (and duration) in seconds on the reference")
        #expect(parseError("id,duration\n") == "line 1: the header has no start column")
        #expect(parseError("start\n") == "line 1: the header has no id column")
        #expect(try parse("id,start\n") == [])
    }

    @Test func rowErrors() throws {
        #expect(parseError("id,start\na,1,2\n") == "line 2: 3 fields, but the header has 2")
        #expect(parseError("id,start\na,\n") == "line 2, column start: a cue needs a start (seconds on the reference)")
        #expect(parseError("id,start\na,NaN\n") == #"line 2, column start: "NaN" is not a number of seconds (digits with an optional decimal point, like 12.5)"#)
        #expect(parseError("id,start\na,inf\n") == #"line 2, column start: "inf" is not a number of seconds (digits with an optional decimal point, like 12.5)"#)
        #expect(parseError("id,start\na,1e2\n") == #"line 2, column start: "1e2" is not a number of seconds (digits with an optional decimal point, like 12.5)"#)
        let huge = "9" + String(repeating: "9", count: 400)
        #expect(parseError("id,start\na,\(huge)\n") == "line 2, column start: \(String(huge.prefix(40)))… is too large")
        #expect(parseError("id,start\na,-1\n") == "line 2: cue a: starts at -1.0 s, outside the reference (0–600.0 s)")
        #expect(parseError("id,start\na,600.5\n") == "line 2: cue a: starts at 600.5 s, outside the reference (0–600.0 s)")
        #expect(parseError("id,start,duration\na,1,-5\n") == "line 2, column duration: -5 is negative; it must be 0 or more seconds")
        #expect(parseError("id,start,end-on-next\na,1,yes\n") == "line 2, column end-on-next: yes is not allowed: END-ON-NEXT is YES or left out")
        #expect(parseError("id,start,restrict\na,1,\"SKIP,FOO\"\n") == #"line 2, column restrict: "FOO" is not one of SKIP, JUMP"#)
        #expect(parseError("id,start,content-may-vary\na,1,maybe\n") == #"line 2, column content-may-vary: "maybe" is not one of "YES", "NO""#)
        #expect(parseError("id,start\n,1\n") == "line 2: cue (no id): the id is empty")
        #expect(parseError("id,start\na,1\nb,2\na,3\n") == "line 4: cue a: the id is given again (first on line 2)")
        #expect(parseError("id,class,start\nad,com.apple.hls.interstitial,1\n") == "line 2: cue ad: an interstitial needs X-ASSET-URI or X-ASSET-LIST")
        #expect(parseError("id,class,start,asset-uri,asset-list\nad,com.apple.hls.interstitial,1,a,b\n")
            == "line 2: cue ad: an interstitial takes X-ASSET-URI or X-ASSET-LIST, not both")
    }

    @Test func textAndAttributeCellErrors() throws {
        #expect(parseError("id,start\n\"two\nlines\",1\n") == "line 2, column id: the text contains a line break")
        #expect(parseError("id,start\n\"say \"\"hi\"\"\",1\n") == #"line 2, column id: "say "hi"" contains a quote ("), which an HLS quoted string cannot hold"#)
        #expect(parseError("id,start\n\"tab\there\",1\n") == "line 2, column id: the text contains the control character U+0009")
        #expect(parseError("id,start,X-A\na,1,\"\"\"open\"\n") == "line 2, column X-A: unterminated quoted string in X-A")
        #expect(parseError("id,start,X-A\na,1,two words\n") == "line 2, column X-A: X-A: a space in an unquoted value; quote text that holds spaces")
        #expect(parseError("id,start,X-A\na,1,\"a,b\"\n") == #"line 2, column X-A: X-A: a "," ends the value; quote text that holds commas"#)
        // A record is named by the line it starts on; a line break inside a quoted field moves later ones.
        #expect(parseError("id,start,X-A\na,1,\"\"\"x\ny\"\"\"\nb,bad\n") == "line 2, column X-A: the quoted string of X-A contains a line break")
        #expect(parseError("id,start\na,1\n\"b,x\ny\",oops\n") == "line 3, column id: the text contains a line break")
    }

    @Test func notCSVAtAll() throws {
        #expect(throws: EarshotError.catalogInvalid("the file is not UTF-8 text")) {
            try CueCSV.parse(bytes: [0x69, 0x64, 0xFF, 0xFE], referenceDuration: 600)
        }
        #expect(parseError("#EXTM3U\n#EXT-X-VERSION:3\n")?.hasPrefix(##"line 1, column 1: unknown column "#EXTM3U";"##) == true)
        #expect(parseError("id,start\na,\"1\"x\n") == #"line 2, field 2: text after the closing quote; write a quote inside a quoted field as """#)
    }
}
