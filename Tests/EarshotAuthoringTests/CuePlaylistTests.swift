import EarshotAuthoring
import EarshotCore
import Foundation
import Testing

@Suite("Cue playlists (EXT-X-DATERANGE)")
struct CuePlaylistTests {
    /// A 10-minute reference, as most tests use.
    private let duration = 600.0

    private func parse(_ text: String, duration: Double = 600, origin: Date? = nil) throws -> [Cue] {
        try CuePlaylist.parse(text: text, referenceDuration: duration, origin: origin)
    }

    /// The message of the error parsing `text` throws.
    private func parseError(_ text: String, duration: Double = 600, origin: Date? = nil) -> String? {
        do {
            _ = try CuePlaylist.parse(text: text, referenceDuration: duration, origin: origin)
            return nil
        } catch {
            guard case .catalogInvalid(let message) = error else { return "wrong case: \(error)" }
            return message
        }
    }

    private func bytesError(_ bytes: [UInt8]) -> String? {
        do {
            _ = try CuePlaylist.parse(bytes: bytes, referenceDuration: 600)
            return nil
        } catch {
            return error.message
        }
    }

    /// A playlist whose programme starts at 2020-01-02T21:55:40Z, with `tags` before its segments.
    private func playlist(_ tags: String...) -> String {
        "#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXT-X-PROGRAM-DATE-TIME:2020-01-02T21:55:40.000Z\n"
            + tags.map { $0 + "\n" }.joined() + "#EXTINF:10,\nmain1.ts\n#EXTINF:10,\nmain2.ts\n#EXT-X-ENDLIST\n"
    }

    // MARK: The HLS interstitials examples

    @Test func hlsInterstitialsExamples() throws {
        let text = """
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
            #EXT-X-DATERANGE:ID="post",CLASS="com.apple.hls.interstitial",START-DATE="2020-01-02T21:55:40.000Z",CUE="POST",X-ASSET-URI="http://example.com/postroll.m3u8",X-PLAYOUT-LIMIT=30.5,X-CONTENT-MAY-VARY="NO",X-TIMELINE-OCCUPIES="RANGE",X-TIMELINE-STYLE="PRIMARY"
            #EXT-X-ENDLIST

            """
        let cues = try parse(text)
        #expect(cues.map(\.id) == ["pre", "post", "ad1"])  // timeline order; same start keeps tag order
        let pre = cues[0], post = cues[1], ad = cues[2]
        #expect(pre == Cue(id: "pre", cueClass: Cue.interstitialClass, start: 0, assetURI: "http://example.com/preroll.m3u8", flags: [.pre, .once]))
        #expect(post == Cue(id: "post", cueClass: Cue.interstitialClass, start: 0, assetURI: "http://example.com/postroll.m3u8",
                            playoutLimit: 30.5, flags: [.post], contentMayVary: false, timelineOccupies: .range, timelineStyle: .primary))
        #expect(ad.start == 4)
        #expect(ad.duration == 15)
        #expect(ad.assetList == "http://example.com/ad-list.json")
        #expect(ad.assetURI == nil)
        #expect(ad.resumeOffset == 0)
        #expect(ad.restrictions == [.skip, .jump])
        #expect(ad.snap == [.out, .in])
        #expect(ad.attributes == [
            "X-COM-EXAMPLE-AD-ID": CueAttribute(.quotedString, "XYZ123"),
            "SCTE35-OUT": CueAttribute(.hexadecimal, "0xFC302000000000000000FFF00506FE0000000000000000"),
        ])
    }

    @Test func rfc8216DaterangeExample() throws {
        // RFC 8216 §4.3.2.7's attributes: a class, END-DATE instead of DURATION, a client attribute.
        let cues = try parse(playlist(
            #"#EXT-X-DATERANGE:ID="splice-6FFFFFF0",START-DATE="2020-01-02T21:56:10.5Z",PLANNED-DURATION=59.993,SCTE35-OUT=0xFC002F0000000000FF000014056FFFFFF000E011622DCAFF000052636200000000000A0008029896F50000008700000000"#,
            #"#EXT-X-DATERANGE:ID="splice-6FFFFFF0",DURATION=59.993,SCTE35-IN=0xFC002A0000000000FF00000F056FFFFFF000401162802E6100000000000A0008029896F50000008700000000"#,
            #"#EXT-X-DATERANGE:ID="show",CLASS="com.example.show",START-DATE="2020-01-02T23:55:40+02:00",END-DATE="2020-01-02T22:05:40.000Z",X-COM-EXAMPLE-RATING=7.5,X-COM-EXAMPLE-KIND=LIVE"#))
        #expect(cues.count == 2)
        let show = cues[0], splice = cues[1]
        #expect(show == Cue(id: "show", cueClass: "com.example.show", start: 0, duration: 600,
                            attributes: ["X-COM-EXAMPLE-RATING": CueAttribute(.decimal, "7.5"), "X-COM-EXAMPLE-KIND": CueAttribute(.enumerated, "LIVE")]))
        #expect(splice.start == 30.5)
        #expect(splice.plannedDuration == 59.993)
        #expect(splice.duration == 59.993)  // added by the second tag with the same ID
        #expect(splice.attributes.keys.sorted() == ["SCTE35-IN", "SCTE35-OUT"])
    }

    @Test func endOnNextAndPointCues() throws {
        let cues = try parse(playlist(
            #"#EXT-X-DATERANGE:ID="ch1",CLASS="chapter",START-DATE="2020-01-02T21:55:40Z",END-ON-NEXT=YES"#,
            #"#EXT-X-DATERANGE:ID="ch2",CLASS="chapter",START-DATE="2020-01-02T21:57:40Z",END-ON-NEXT=YES"#,
            #"#EXT-X-DATERANGE:ID="mark",START-DATE="2020-01-02T21:56:00.25Z",X-SKIP-CONTROL-OFFSET=5,X-SKIP-CONTROL-DURATION=10,X-SKIP-CONTROL-LABEL-ID="SKIP_INTRO""#))
        #expect(cues.map(\.id) == ["ch1", "mark", "ch2"])
        #expect(cues[0].endOnNext && cues[2].endOnNext)
        #expect(cues[1] == Cue(id: "mark", start: 20.25, skipControlOffset: 5, skipControlDuration: 10, skipControlLabelID: "SKIP_INTRO"))
        let schedule = try CueSchedule(cues, referenceDuration: duration)
        #expect(schedule.end(ofCueAt: 0) == 120)
        #expect(schedule.end(ofCueAt: 2) == 600)
    }

    // MARK: The origin

    @Test func originIsTheFirstProgramDateTimeBeforeTheFirstSegment() throws {
        let text = """
            #EXTM3U
            #EXT-X-DATERANGE:ID="a",START-DATE="2024-05-01T20:00:10.000Z"
            #EXT-X-PROGRAM-DATE-TIME:2024-05-01T20:00:00.000Z
            #EXT-X-PROGRAM-DATE-TIME:2024-05-01T20:00:05.000Z
            #EXTINF:10,
            seg1.ts
            #EXT-X-PROGRAM-DATE-TIME:2024-05-01T20:00:08.000Z
            #EXTINF:10,
            seg2.ts
            """
        #expect(try parse(text).first?.start == 10)
        // A given origin wins over the playlist's.
        let origin = try #require(ISODate.parse("2024-05-01T20:00:02.5Z"))
        #expect(try parse(text, origin: origin).first?.start == 7.5)
    }

    @Test func noOriginAsksForOne() throws {
        let message = """
            line 3: cue a: START-DATE cannot be placed on the reference: the playlist has no #EXT-X-PROGRAM-DATE-TIME before \
            its first segment; pass --origin (the date at which the reference starts)
            """
        #expect(parseError("#EXTM3U\n#EXTINF:10,\nseg.ts\n#EXT-X-PROGRAM-DATE-TIME:2024-05-01T20:00:00Z\n#EXT-X-DATERANGE:ID=\"a\",START-DATE=\"2024-05-01T20:00:10Z\"\n")
            == message.replacingOccurrences(of: "line 3", with: "line 5"))
        #expect(parseError("#EXTM3U\n\n#EXT-X-DATERANGE:ID=\"a\",START-DATE=\"2024-05-01T20:00:10Z\"\n") == message)
        // No tags: nothing to place, no origin needed.
        #expect(try parse("#EXTM3U\n#EXTINF:10,\nseg.ts\n") == [])
    }

    @Test func timesAreExactToTheDigit() throws {
        let cues = try parse(playlist(
            #"#EXT-X-DATERANGE:ID="a",START-DATE="2020-01-02T21:55:40.1Z",END-DATE="2020-01-02T21:55:40.3Z""#,
            #"#EXT-X-DATERANGE:ID="b",START-DATE="2020-01-02T21:55:40.123456789012Z""#))
        #expect(cues[0].start == 0.1)
        #expect(cues[0].duration == 0.2)  // 0.3 − 0.1 in decimal, not 0.19999999999999998
        #expect(cues[1].start == 0.123456789012)
    }

    // MARK: Export → import

    /// Every field, and extra attributes of every kind.
    static let everything: [Cue] = [
        Cue(id: "pre", cueClass: Cue.interstitialClass, start: 0, assetURI: "https://ads.example/pre.m3u8", flags: [.pre, .once]),
        Cue(id: "ad-1", cueClass: Cue.interstitialClass, start: 12.345, duration: 30, plannedDuration: 29.5,
            assetList: "https://ads.example/list.json?slot=1&x=a,b", resumeOffset: -0.5, playoutLimit: 45.25,
            restrictions: [.jump, .skip], snap: [.out, .in], contentMayVary: false, timelineOccupies: .range,
            timelineStyle: .primary, skipControlOffset: 5, skipControlDuration: 12.5, skipControlLabelID: "SKIP_AD",
            attributes: [
                "X-COM-EXAMPLE-TEXT": CueAttribute(.quotedString, "ünï, \"q\"".replacingOccurrences(of: "\"", with: "'")),
                "X-COM-EXAMPLE-EMPTY": CueAttribute(.quotedString, ""),
                "SCTE35-OUT": CueAttribute(.hexadecimal, "0xFC30a1"),
                "X-COM-EXAMPLE-INT": CueAttribute(.decimal, "42"),
                "X-COM-EXAMPLE-FLOAT": CueAttribute(.decimal, "1.50"),
                "X-COM-EXAMPLE-SIGNED": CueAttribute(.decimal, "-7.25"),
                "X-COM-EXAMPLE-RES": CueAttribute(.decimal, "1280x720"),
                "X-COM-EXAMPLE-ENUM": CueAttribute(.enumerated, "LIVE"),
                "ODD-NAME-2": CueAttribute(.enumerated, "é"),
            ]),
        Cue(id: "chapter 1", cueClass: "com.example.chapter", start: 0.1 + 0.2, endOnNext: true, contentMayVary: true,
            timelineOccupies: .point, timelineStyle: .highlight),
        Cue(id: "chapter 2", cueClass: "com.example.chapter", start: 1e-7, endOnNext: true),
        Cue(id: "point", start: 599.999999, plannedDuration: 1e-9),
        Cue(id: "post", cueClass: Cue.interstitialClass, start: 600, duration: 1e21, assetURI: "https://ads.example/post.m3u8",
            flags: [.post]),
        Cue(id: "third", start: 1.0 / 3.0, duration: 2.0 / 3.0, resumeOffset: 1e-300),
    ]

    @Test func exportThenImportGivesTheSameCues() throws {
        let expected = try CueSchedule(Self.everything, referenceDuration: duration).cues
        let text = try CuePlaylist.render(Self.everything, referenceDuration: duration)
        #expect(try parse(text) == expected, "\(text)")
        for originText in ["2024-05-01T20:15:00.123Z", "1970-01-01T00:00:00Z", "0001-01-01T00:00:00.999999Z", "9999-12-31T23:00:00Z"] {
            let origin = try #require(ISODate.parse(originText))
            let withOrigin = try CuePlaylist.render(Self.everything, referenceDuration: duration, origin: origin)
            #expect(try parse(withOrigin) == expected, "\(originText)")
            #expect(try parse(withOrigin, origin: origin) == expected, "\(originText)")
        }
        // Through the CSV too.
        #expect(try CueCSV.parse(text: CueCSV.render(try parse(text), referenceDuration: duration), referenceDuration: duration) == expected)
    }

    @Test func exportedPlaylistLayout() throws {
        let cues = [
            Cue(id: "ad", cueClass: Cue.interstitialClass, start: 4, duration: 15, assetURI: "http://example.com/ad1.m3u8", resumeOffset: 0,
                restrictions: [.skip, .jump]),
            Cue(id: "pre", cueClass: Cue.interstitialClass, start: 0, assetURI: "http://example.com/pre.m3u8", flags: [.pre]),
        ]
        let text = try CuePlaylist.render(cues, referenceDuration: 90.5)
        #expect(text == """
            #EXTM3U
            #EXT-X-VERSION:3
            # Cues of one Earshot reference (90.5 s): a cue's START-DATE minus the PROGRAM-DATE-TIME is its time on the reference.
            #EXT-X-TARGETDURATION:91
            #EXT-X-PLAYLIST-TYPE:VOD
            #EXT-X-PROGRAM-DATE-TIME:2000-01-01T00:00:00.000Z
            #EXT-X-DATERANGE:ID="pre",CLASS="com.apple.hls.interstitial",START-DATE="2000-01-01T00:00:00.000Z",X-ASSET-URI="http://example.com/pre.m3u8",CUE="PRE"
            #EXT-X-DATERANGE:ID="ad",CLASS="com.apple.hls.interstitial",START-DATE="2000-01-01T00:00:04.000Z",DURATION=15,X-ASSET-URI="http://example.com/ad1.m3u8",X-RESUME-OFFSET=0,X-RESTRICT="SKIP,JUMP"
            #EXTINF:90.5,
            reference.ts
            #EXT-X-ENDLIST

            """)
        #expect(try CuePlaylist.render([], referenceDuration: 0.2).contains("#EXT-X-TARGETDURATION:1\n"))
    }

    @Test func exportRefusesWhatWouldNotReadBack() throws {
        func renderError(_ cue: Cue) -> String? {
            do {
                _ = try CuePlaylist.render([cue], referenceDuration: 600)
                return nil
            } catch {
                return error.message
            }
        }
        #expect(renderError(Cue(id: "a\"b", start: 1)) == #"cue a"b: the quoted string of ID contains a quote ("), which it cannot hold"#)
        #expect(renderError(Cue(id: "a", start: 1, assetURI: "")) == "cue a: X-ASSET-URI: the value is empty; leave it out instead")
        #expect(renderError(Cue(id: "a", start: 1, restrictions: [.skip, .skip])) == "cue a: X-RESTRICT: lists SKIP twice")
        #expect(renderError(Cue(id: "a", start: 1, attributes: ["X-A": CueAttribute(.decimal, "abc")])) == #"cue a: X-A: "abc" is not a decimal number"#)
        #expect(renderError(Cue(id: "a", start: 1, attributes: ["X-A": CueAttribute(.enumerated, "1")]))
            == #"cue a: X-A: "1" does not read as enumerated-string (it reads as decimal-integer)"#)
        #expect(renderError(Cue(id: "a", start: 1, attributes: ["X-A": CueAttribute(.hexadecimal, "FF")]))
            == #"cue a: X-A: "FF" does not read as hexadecimal-sequence (it reads as enumerated-string)"#)
        #expect(renderError(Cue(id: "a", start: 1, attributes: ["x-a": CueAttribute(.decimal, "1")]))
            == #"cue a: attribute name "x-a" has lowercase letters; names are upper case (A–Z, 0–9 and -)"#)
        #expect(renderError(Cue(id: "a", start: 1, attributes: ["DURATION": CueAttribute(.decimal, "1")]))
            == "cue a: DURATION is a cue field, not an extra attribute")
        #expect(renderError(Cue(id: "a", start: 700)) == "cue a: starts at 700.0 s, outside the reference (0–600.0 s)")
        let origin = try #require(ISODate.parse("9999-12-31T23:59:00Z") as Date?)
        #expect(throws: EarshotError.catalogInvalid("cue a: its START-DATE (the origin + 120.0 s) is not a date a playlist can give")) {
            try CuePlaylist.render([Cue(id: "a", start: 120)], referenceDuration: 600, origin: origin)
        }
    }

    // MARK: Hostile input: the exact error and line

    @Test func notAPlaylist() throws {
        #expect(bytesError([]) == "line 1: the file is empty; a playlist starts with #EXTM3U")
        #expect(parseError("#EXT-X-VERSION:3\n#EXTM3U\n") == "line 1: not an HLS playlist: the first line must be #EXTM3U")
        #expect(parseError("#EXTM3U8\n") == "line 1: not an HLS playlist: the first line must be #EXTM3U")
        #expect(parseError("id,start\n") == "line 1: not an HLS playlist: the first line must be #EXTM3U")
        #expect(bytesError([0xEF, 0xBB, 0xBF] + Array("#EXTM3U\n".utf8))
            == "line 1: the file starts with a byte order mark, which RFC 8216 forbids in a playlist; save it without one")
        #expect(try parse("#EXTM3U") == [])
        #expect(try parse("#EXTM3U\r\n#EXT-X-PROGRAM-DATE-TIME:2024-05-01T20:00:00Z\r\n#EXT-X-DATERANGE:ID=\"a\",START-DATE=\"2024-05-01T20:00:01Z\"\r\n")
            .map(\.start) == [1])
    }

    @Test func binaryGarbage() throws {
        var state: UInt64 = 7
        let garbage: [UInt8] = (0..<4096).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: state >> 56)
        }
        #expect(bytesError(garbage) == "line 1: not an HLS playlist: the first line must be #EXTM3U")
        #expect(bytesError(Array("#EXTM3U\n#EXT-X-VERSION:3\n".utf8) + [0xFF, 0xFE, 0x0A]) == "line 3: not UTF-8 text")
        #expect(bytesError(Array("#EXTM3U\n\n#EXT-X-DATERANGE:ID=\"a\u{0}\"\n".utf8))
            == "line 3: the character U+0000 (a control character), which a playlist cannot hold")
        #expect(bytesError(Array("#EXTM3U\nseg.ts\rmore\n".utf8)) == "line 2: a line break (a control character), which a playlist cannot hold")
    }

    @Test func attributeSyntaxErrorsNameLineAndColumn() throws {
        #expect(parseError(playlist(#"#EXT-X-DATERANGE:ID="a,START-DATE="2020-01-02T21:55:40Z""#))
            == "line 4, column 36: ID: text after the closing quote; a quoted string is the whole value")
        #expect(parseError(playlist(#"#EXT-X-DATERANGE:ID="a",X-A="open"#)) == "line 4, column 29: unterminated quoted string in X-A")
        #expect(parseError(playlist(#"#EXT-X-DATERANGE:ID="a",START-DATE"#)) == #"line 4, column 25: attribute "START-DATE" has no "=" and value"#)
        #expect(parseError(playlist(#"#EXT-X-DATERANGE:ID="a",=1"#)) == #"line 4, column 25: empty attribute name before "=""#)
        #expect(parseError(playlist(#"#EXT-X-DATERANGE:id="a""#))
            == #"line 4, column 18: attribute name "id" has lowercase letters; names are upper case (A–Z, 0–9 and -)"#)
        #expect(parseError(playlist(#"#EXT-X-DATERANGE:ID="a",DURATION=1,DURATION=2"#)) == "line 4, column 36: DURATION given twice in one tag")
        // A line break inside a quoted string ends the tag's line: the string is never closed.
        #expect(parseError(playlist("#EXT-X-DATERANGE:ID=\"a\nb\",START-DATE=\"2020-01-02T21:55:40Z\"")) == "line 4, column 21: unterminated quoted string in ID")
        #expect(parseError(playlist("#EXT-X-DATERANGE")) == #"line 4: #EXT-X-DATERANGE needs ":" and its attributes"#)
        #expect(parseError(playlist("#EXT-X-DATERANGE:")) == "line 4: EXT-X-DATERANGE has no ID")
        #expect(parseError(playlist(#"#EXT-X-DATERANGE:ID=a"#)) == #"line 4: ID: a must be a quoted string, like ID="…""#)
    }

    @Test func badValues() throws {
        func tag(_ attributes: String) -> String { playlist(#"#EXT-X-DATERANGE:ID="x",START-DATE="2020-01-02T21:55:50Z","# + attributes) }
        #expect(parseError(tag("DURATION=-5")) == "line 4: cue x: DURATION: -5 is negative; it must be 0 or more seconds")
        #expect(parseError(tag("DURATION=NaN")) == "line 4: cue x: DURATION: NaN is not a number of seconds (digits with an optional decimal point, like 12.5)")
        #expect(parseError(tag("DURATION=inf")) == "line 4: cue x: DURATION: inf is not a number of seconds (digits with an optional decimal point, like 12.5)")
        #expect(parseError(tag("DURATION=1e3")) == "line 4: cue x: DURATION: 1e3 is not a number of seconds (digits with an optional decimal point, like 12.5)")
        #expect(parseError(tag(#"DURATION="5""#)) == #"line 4: cue x: DURATION: "5" is not a number of seconds (digits with an optional decimal point, like 12.5)"#)
        let huge = "1" + String(repeating: "0", count: 400)
        #expect(parseError(tag("PLANNED-DURATION=\(huge)")) == "line 4: cue x: PLANNED-DURATION: \(String(huge.prefix(40)))… is too large")
        #expect(parseError(tag("X-RESUME-OFFSET=-\(huge).5")) == "line 4: cue x: X-RESUME-OFFSET: -\(String(huge.prefix(39)))… is too large")
        #expect(parseError(tag("END-ON-NEXT=NO")) == "line 4: cue x: END-ON-NEXT: NO is not allowed: END-ON-NEXT is YES or left out")
        #expect(parseError(tag(#"CLASS="c",END-ON-NEXT=YES,DURATION=5"#)) == "line 4: cue x: END-ON-NEXT cannot be given with a DURATION")
        #expect(parseError(tag("END-ON-NEXT=YES")) == "line 4: cue x: END-ON-NEXT needs a CLASS")
        #expect(parseError(tag(#"X-RESTRICT="SKIP,SEEK""#)) == #"line 4: cue x: X-RESTRICT: "SEEK" is not one of SKIP, JUMP"#)
        #expect(parseError(tag(#"X-RESTRICT=SKIP"#)) == #"line 4: cue x: X-RESTRICT: SKIP must be a quoted string, like X-RESTRICT="…""#)
        #expect(parseError(tag(#"CUE="PRE,PRE""#)) == "line 4: cue x: CUE: lists PRE twice")
        #expect(parseError(tag(#"CUE="PRE,POST""#)) == "line 4: cue x: CUE cannot be both PRE and POST")
        #expect(parseError(tag(#"X-CONTENT-MAY-VARY="MAYBE""#)) == #"line 4: cue x: X-CONTENT-MAY-VARY: "MAYBE" is not one of "YES", "NO""#)
        #expect(parseError(tag(#"X-TIMELINE-STYLE="BOLD""#)) == #"line 4: cue x: X-TIMELINE-STYLE: "BOLD" is not one of "HIGHLIGHT", "PRIMARY""#)
        #expect(parseError(tag(#"X-ASSET-URI="""#)) == "line 4: cue x: X-ASSET-URI: the value is empty; leave it out instead")
        #expect(parseError(tag(#"CLASS=chapter"#)) == #"line 4: cue x: CLASS: chapter must be a quoted string, like CLASS="…""#)
        // Lenient on spaces inside a list.
        #expect(try parse(tag(#"X-RESTRICT="SKIP, JUMP""#)).first?.restrictions == [.skip, .jump])
    }

    @Test func badDates() throws {
        #expect(parseError(playlist(#"#EXT-X-DATERANGE:ID="x",START-DATE="2020-01-02T21:55:50""#))
            == #"line 4: cue x: START-DATE: "2020-01-02T21:55:50" has no time zone; add Z (UTC) or an offset like +02:00"#)
        #expect(parseError(playlist(#"#EXT-X-DATERANGE:ID="x",START-DATE="2020-01-02T21:55:50.5""#))
            == #"line 4: cue x: START-DATE: "2020-01-02T21:55:50.5" has no time zone; add Z (UTC) or an offset like +02:00"#)
        #expect(parseError(playlist(#"#EXT-X-DATERANGE:ID="x",START-DATE="2020-02-30T21:55:50Z""#))
            == #"line 4: cue x: START-DATE: "2020-02-30T21:55:50Z" is not an ISO 8601 date-time with a zone, like 2024-05-01T20:15:00.000Z"#)
        #expect(parseError(playlist(#"#EXT-X-DATERANGE:ID="x",START-DATE="2020-01-02""#))
            == #"line 4: cue x: START-DATE: "2020-01-02" is not an ISO 8601 date-time with a zone, like 2024-05-01T20:15:00.000Z"#)
        #expect(parseError(playlist(#"#EXT-X-DATERANGE:ID="x",START-DATE=2020"#))
            == #"line 4: cue x: START-DATE: 2020 must be a quoted string, like START-DATE="2024-05-01T20:15:00.000Z""#)
        #expect(parseError(playlist(#"#EXT-X-DATERANGE:ID="x""#)) == "line 4: cue x: EXT-X-DATERANGE has no START-DATE")
        #expect(parseError("#EXTM3U\n#EXT-X-PROGRAM-DATE-TIME:yesterday\n")
            == #"line 2: EXT-X-PROGRAM-DATE-TIME: "yesterday" is not an ISO 8601 date-time with a zone, like 2024-05-01T20:15:00.000Z"#)
    }

    @Test func startsOutsideTheReference() throws {
        #expect(parseError(playlist(#"#EXT-X-DATERANGE:ID="early",START-DATE="2020-01-02T21:55:39.5Z""#))
            == "line 4: cue early: START-DATE is 0.5 s before the origin 2020-01-02T21:55:40.000Z; a cue cannot start before the reference")
        #expect(parseError(playlist(#"#EXT-X-DATERANGE:ID="late",START-DATE="2020-01-02T22:05:40.001Z""#))
            == "line 4: cue late: starts at 600.001 s, outside the reference (0–600.0 s)")
        #expect(parseError(playlist(#"#EXT-X-DATERANGE:ID="x",START-DATE="2020-01-02T21:55:50Z",END-DATE="2020-01-02T21:55:49Z""#))
            == "line 4: cue x: END-DATE is before START-DATE")
        #expect(parseError(playlist(#"#EXT-X-DATERANGE:ID="x",START-DATE="2020-01-02T21:55:50Z",END-DATE="2020-01-02T21:56:00Z",DURATION=10.002"#))
            == "line 4: cue x: END-DATE − START-DATE is 10 s but DURATION is 10.002 s; they must agree (within 1 ms)")
        #expect(try parse(playlist(#"#EXT-X-DATERANGE:ID="x",START-DATE="2020-01-02T21:55:50Z",END-DATE="2020-01-02T21:56:00Z",DURATION=10.001"#))
            .first?.duration == 10.001)
        #expect(parseError(playlist(#"#EXT-X-DATERANGE:ID="x",CLASS="c",START-DATE="2020-01-02T21:55:50Z",END-DATE="2020-01-02T21:56:00Z",END-ON-NEXT=YES"#))
            == "line 4: cue x: END-ON-NEXT cannot be given with an END-DATE")
    }

    @Test func interstitialAssets() throws {
        #expect(parseError(playlist(#"#EXT-X-DATERANGE:ID="ad",CLASS="com.apple.hls.interstitial",START-DATE="2020-01-02T21:55:50Z""#))
            == "line 4: cue ad: an interstitial needs X-ASSET-URI or X-ASSET-LIST")
        #expect(parseError(playlist(
            #"#EXT-X-DATERANGE:ID="ad",CLASS="com.apple.hls.interstitial",START-DATE="2020-01-02T21:55:50Z",X-ASSET-URI="a.m3u8",X-ASSET-LIST="l.json""#))
            == "line 4: cue ad: an interstitial takes X-ASSET-URI or X-ASSET-LIST, not both")
        // The second tag of an ID can complete the first.
        #expect(try parse(playlist(#"#EXT-X-DATERANGE:ID="ad",CLASS="com.apple.hls.interstitial",START-DATE="2020-01-02T21:55:50Z""#,
                                   #"#EXT-X-DATERANGE:ID="ad",X-ASSET-URI="a.m3u8""#)).first?.assetURI == "a.m3u8")
    }

    @Test func repeatedIDs() throws {
        #expect(parseError(playlist(#"#EXT-X-DATERANGE:ID="ad",CLASS="a",START-DATE="2020-01-02T21:55:50Z""#,
                                    #"#EXT-X-DATERANGE:ID="other",START-DATE="2020-01-02T21:55:50Z""#,
                                    #"#EXT-X-DATERANGE:ID="ad",CLASS="b""#))
            == #"line 6: cue ad: CLASS="b" conflicts with CLASS="a" on line 4; a tag repeating an ID may only add attributes"#)
        #expect(parseError(playlist(#"#EXT-X-DATERANGE:ID="ad",START-DATE="2020-01-02T21:55:50Z",DURATION=10"#,
                                    #"#EXT-X-DATERANGE:ID="ad",DURATION=10.0"#))
            == "line 5: cue ad: DURATION=10.0 conflicts with DURATION=10 on line 4; a tag repeating an ID may only add attributes")
        // The same values again are fine.
        #expect((try? parse(playlist(#"#EXT-X-DATERANGE:ID="ad",START-DATE="2020-01-02T21:55:50Z",DURATION=10"#,
                                     #"#EXT-X-DATERANGE:ID="ad",START-DATE="2020-01-02T21:55:50Z",DURATION=10"#)))?.count == 1)
    }

    @Test func allOrNothing() throws {
        // One bad cue among good ones: an error, no cues.
        #expect(parseError(playlist(#"#EXT-X-DATERANGE:ID="good",START-DATE="2020-01-02T21:55:50Z""#,
                                    #"#EXT-X-DATERANGE:ID="bad",START-DATE="2020-01-02T21:55:50Z",DURATION=-1"#))
            == "line 5: cue bad: DURATION: -1 is negative; it must be 0 or more seconds")
    }

    @Test func otherTagsCommentsAndBlankLinesAreIgnored() throws {
        let cues = try parse("""
            #EXTM3U

            # a comment: #EXT-X-DATERANGE:ID="not a tag"
            #EXT-X-INDEPENDENT-SEGMENTS
            #EXT-X-MAP:URI="init.mp4"
            #EXT-X-PROGRAM-DATE-TIME:2024-05-01T22:00:00+02:00
            #EXT-X-DATERANGE-LIKE:whatever
            #EXT-X-DATERANGE:ID="a",START-DATE="2024-05-01T20:00:30Z"
            #EXTINF:10,
            seg.ts
            """)
        #expect(cues == [Cue(id: "a", start: 30)])
    }
}
