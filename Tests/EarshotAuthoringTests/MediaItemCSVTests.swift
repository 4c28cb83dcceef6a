import EarshotAuthoring
import EarshotCore
import Foundation
import Testing

@Suite("Media-items CSV parsing and rendering")
struct MediaItemCSVTests {
    private func parse(_ text: String) throws -> [MediaItemCSV.Row] { try MediaItemCSV.parse(text: text) }

    /// The message of the error `parse` throws for `text`.
    private func parseError(_ text: String) -> String? {
        do {
            _ = try MediaItemCSV.parse(text: text)
            return nil
        } catch {
            guard case .catalogInvalid(let message) = error else { return "wrong case: \(error)" }
            return message
        }
    }

    @Test func plainRowsAndFileColumn() throws {
        let rows = try parse("signature,id,title\na.wav,x,Hello\nb.earsig,y,World\n")
        #expect(rows.count == 2)
        #expect(rows[0].file == "a.wav")
        #expect(rows[0].item.id == "x")
        #expect(rows[0].item.title == "Hello")
        #expect(rows[0].line == 2)
        #expect(rows[1].file == "b.earsig")
        #expect(try parse("FILE,Title\na.wav,T\n")[0].file == "a.wav")
    }

    @Test func quotingWithCommasAndEscapedQuotes() throws {
        let rows = try parse("id,title,artist\nx,\"Hello, world\",\"She said \"\"hi\"\"\"\n")
        #expect(rows[0].item.title == "Hello, world")
        #expect(rows[0].item.artist == "She said \"hi\"")
    }

    @Test func lineBreakInsideQuotesKeepsLaterLineNumbers() throws {
        let rows = try parse("id,title\nx,\"two\nlines\"\ny,next\n")
        #expect(rows[0].item.title == "two\nlines")
        #expect(rows[1].line == 4)
        let message = parseError("id,title\nx,\"two\nlines\"\ny,\"bad\"x\n")
        #expect(message?.hasPrefix("line 4") == true, "\(message ?? "no error")")
    }

    @Test func byteOrderMarkAndCRLF() throws {
        let rows = try parse("\u{FEFF}signature,title\r\na.wav,A\r\nb.wav,B")
        #expect(rows.map(\.file) == ["a.wav", "b.wav"])
        #expect(rows.map(\.item.title) == ["A", "B"])
        let bytes: [UInt8] = [0xEF, 0xBB, 0xBF] + Array("id,title\r\nx,Ü\r\n".utf8)
        #expect(try MediaItemCSV.parse(bytes: bytes)[0].item.title == "Ü")
    }

    @Test func blankLinesAndEmptyCells() throws {
        let rows = try parse("id,title,subtitle,genres,timeRanges\n\nx,,,,\n\n")
        #expect(rows.count == 1)
        let item = rows[0].item
        #expect(item.title == nil && item.subtitle == nil && item.genres.isEmpty && item.timeRanges.isEmpty)
    }

    @Test func headerNamesAreCaseInsensitive() throws {
        let rows = try parse("SIGNATURE,ID,Title,ARTWORKURL,timeranges\na.wav,x,T,https://e.com/a.png,1-2\n")
        #expect(rows[0].item.artworkURL == "https://e.com/a.png")
        #expect(rows[0].item.timeRanges == [1..<2])
    }

    @Test func everyStandardColumn() throws {
        let text = """
            signature,id,title,subtitle,artist,genres,isrc,artworkURL,videoURL,webURL,explicitContent,creationDate,timeRanges,frequencySkewRanges
            ep.wav,q1,Title,Sub,Artist, Drama ; Comedy ;,USABC2400001,https://e.com/a.png,https://e.com/v.m3u8,https://e.com,yes,2024-05-01,14-21;31..<40.5,-0.02..<-0.01;0.01-0.02

            """
        let item = try #require(try parse(text).first).item
        #expect(item.id == "q1")
        #expect(item.title == "Title")
        #expect(item.subtitle == "Sub")
        #expect(item.artist == "Artist")
        #expect(item.genres == ["Drama", "Comedy"])
        #expect(item.isrc == "USABC2400001")
        #expect(item.artworkURL == "https://e.com/a.png")
        #expect(item.videoURL == "https://e.com/v.m3u8")
        #expect(item.webURL == "https://e.com")
        #expect(item.explicitContent == true)
        #expect(item.creationDate == Date(timeIntervalSince1970: 1_714_521_600))
        #expect(item.timeRanges == [14..<21, 31..<40.5])
        #expect(item.frequencySkewRanges == [-0.02 ..< -0.01, 0.01..<0.02])
    }

    @Test(arguments: [("true", true), ("FALSE", false), ("yes", true), ("No", false), ("1", true), ("0", false)])
    func explicitContentSpellings(cell: String, expected: Bool) throws {
        #expect(try parse("id,explicitContent\nx,\(cell)\n")[0].item.explicitContent == expected)
    }

    @Test func creationDateForms() throws {
        let rows = try parse("""
            id,creationDate
            a,2024-05-01T20:15:00Z
            b,2024-05-01T22:15:00+02:00
            c,2024-05-01T20:15:00.250Z
            d,2024-05-01T18:45:00-01:30
            e,2024-02-29
            f,1969-12-31

            """)
        #expect(rows[0].item.creationDate == Date(timeIntervalSince1970: 1_714_594_500))
        #expect(rows[1].item.creationDate == rows[0].item.creationDate)
        #expect(rows[2].item.creationDate == Date(timeIntervalSince1970: 1_714_594_500.25))
        #expect(rows[3].item.creationDate == rows[0].item.creationDate)
        #expect(rows[4].item.creationDate == Date(timeIntervalSince1970: 1_709_164_800))
        #expect(rows[5].item.creationDate == Date(timeIntervalSince1970: -86_400))
    }

    /// Export then import gives the same dates: both sides use the proleptic Gregorian calendar
    /// (found by the CSV fuzz harness: 1012-02-01 came back as 1012-01-26 through Foundation's
    /// formatter) and every digit of a fraction is kept.
    @Test(arguments: [
        ("1012-02-01T20:15:00Z", "1012-02-01T20:15:00Z"), ("0000-03-01", "0000-03-01"), ("1582-10-10", "1582-10-10"),
        ("2024-02-01T20:15:00.2501Z", "2024-02-01T20:15:00.2501Z"), ("2001-01-01T00:00:00.123456789Z", "2001-01-01T00:00:00.123456789Z"),
        ("1969-12-31T23:59:59.75Z", "1969-12-31T23:59:59.75Z"), ("2024-05-01T00:00:00.000025Z", "2024-05-01T00:00:00.000025Z"),
        ("2024-05-01T22:15:00+02:00", "2024-05-01T20:15:00Z"), ("9999-12-31T23:59:59Z", "9999-12-31T23:59:59Z"),
    ])
    func creationDatesSurviveExportAndImport(cell: String, rendered: String) throws {
        let rows = try parse("id,creationDate\nx,\(cell)\n")
        let text = MediaItemCSV.render(rows)
        #expect(text.contains(",\(rendered),"), "\(text)")
        #expect(try MediaItemCSV.parse(text: text)[0].item.creationDate == rows[0].item.creationDate)
    }

    @Test func customPropertiesAreJSONValues() throws {
        let text = #"""
            id,custom.question,custom.choices,custom.points,custom.hint,custom.final,x-Cue,custom.nothing
            q,"{""text"":""2+2?"",""answer"":4}","[""A"",""B"",3]",2.5,"""think""",true,"{""at"":14}",null

            """#
        let custom = try parse(text)[0].item.customProperties
        #expect(custom["question"] == .object(["text": .string("2+2?"), "answer": .number(4)]))
        #expect(custom["choices"] == .array([.string("A"), .string("B"), .number(3)]))
        #expect(custom["points"] == .number(2.5))
        #expect(custom["hint"] == .string("think"))
        #expect(custom["final"] == .bool(true))
        #expect(custom["x-Cue"] == .object(["at": .number(14)]))
        #expect(custom["nothing"] == .null)
        // An empty cell means the property is absent, not null.
        #expect(try parse("id,custom.a\nq,\n")[0].item.customProperties.isEmpty)
    }

    @Test func rowsWithoutIDLeaveItEmpty() throws {
        #expect(try parse("signature,title\na.wav,A\n")[0].item.id == "")
    }

    /// Malformed input: each error names the line (and the column when one is at fault).
    @Test(arguments: [
        ("signature,title\na.wav,\"never closed\n", "line 2, field 2: the quoted field opened here is never closed"),
        ("signature,title\na.wav,ab\"c\n", "line 2, field 2: a quote inside an unquoted field"),
        ("signature,title\na.wav,\"ab\"c\n", "line 2, field 2: text after the closing quote"),
        ("signature,titel\na.wav,x\n", "line 1, column titel: unknown column"),
        ("signature,file\na.wav,b.wav\n", "line 1, column file: the column appears twice"),
        ("signature,,title\na.wav,,x\n", "line 1, column 2: the header has an empty column name"),
        ("signature,custom.\na.wav,1\n", "line 1, column custom.: a custom property needs a key"),
        ("signature,title\na.wav,x\nb.wav\n", "line 3: 1 fields, but the header has 2"),
        ("signature,title\na.wav,x,y\n", "line 2: 3 fields, but the header has 2"),
        ("id,explicitContent\nx,maybe\n", "line 2, column explicitContent: \"maybe\" is not a boolean"),
        ("id,creationDate\nx,01/05/2024\n", "line 2, column creationDate: \"01/05/2024\" is not an ISO 8601 date"),
        ("id,creationDate\nx,2023-02-29\n", "line 2, column creationDate: \"2023-02-29\" is not an ISO 8601 date"),
        ("id,creationDate\nx,2024-05-01T24:00:00Z\n", "line 2, column creationDate: \"2024-05-01T24:00:00Z\" is not"),
        ("id,creationDate\nx,2024-05-01T20:15:00\n", "line 2, column creationDate: \"2024-05-01T20:15:00\" is not"),
        ("id,timeRanges\nx,14~21\n", "line 2, column timeRanges: \"14~21\" is not a range"),
        ("id,timeRanges\nx,-1-3\n", "line 2, column timeRanges: \"-1-3\" is not a range"),
        ("id,timeRanges\nx,abc..<3\n", "line 2, column timeRanges: \"abc..<3\" has a bound that is not a number"),
        ("id,timeRanges\nx,1..<inf\n", "line 2, column timeRanges: \"1..<inf\" has a bound that is not a number"),
        ("id,timeRanges\nx,21-14\n", "line 2, column timeRanges: \"21-14\" is empty"),
        ("id,frequencySkewRanges\nx,0.02..<-0.01\n", "line 2, column frequencySkewRanges: \"0.02..<-0.01\" is empty"),
        ("id,reference\nx,first\n", "line 2, column reference: \"first\" is not a reference index"),
        ("id,webURL\nx,not a url\n", "line 2, column webURL: \"not a url\" is not an absolute URL"),
        ("id,title\n\nx,ok\ny,\"fine\"\nz,\"bad\n", "line 5, field 2: the quoted field opened here is never closed"),
        ("id,custom.q\nx,1\ny,{bad\n", "line 3, column custom.q: not a valid JSON value"),
        ("id,custom.q\nx,plain text\n", "line 2, column custom.q: not a valid JSON value"),
        ("", "line 1: the file is empty; a header row is required"),
        ("\n\n", "line 1: the file is empty"),
    ])
    func malformedInputNamesTheLine(text: String, expected: String) {
        let message = parseError(text)
        #expect(message?.hasPrefix(expected) == true, "got: \(message ?? "no error")")
    }

    @Test func invalidUTF8IsRefused() {
        #expect(throws: EarshotError.self) { try MediaItemCSV.parse(bytes: Array("id\n".utf8) + [0xFF, 0xFE, 0x0A]) }
    }

    @Test func renderQuotesOnlyWhenNeeded() {
        let text = MediaItemCSV.render([
            MediaItemCSV.Row(file: "a.wav", item: MediaItem(id: "x", title: "Plain", subtitle: "with, comma", artist: "say \"hi\"")),
        ])
        let lines = text.split(separator: "\n")
        #expect(lines[0].hasPrefix("signature,id,title,subtitle,artist,genres,"))
        #expect(lines[1].hasPrefix("a.wav,x,Plain,\"with, comma\",\"say \"\"hi\"\"\","))
    }

    @Test func renderThenParseGivesTheSameRows() throws {
        let rows = [
            MediaItemCSV.Row(file: "001-ep.earsig", item: MediaItem(
                id: "q1", title: "Line one\nline two, \"quoted\"", subtitle: " leading space", artist: "Ärtist",
                genres: ["Quiz", "Game show"], isrc: "USABC2400001", artworkURL: "https://e.com/a.png?x=1,2",
                videoURL: "https://e.com/v.m3u8", webURL: "https://e.com", explicitContent: false,
                creationDate: Date(timeIntervalSince1970: 1_714_594_500.25),
                timeRanges: [0..<9.5, 14..<21, 31.125..<1e9], frequencySkewRanges: [-0.02 ..< -0.01, 1e-7..<0.5],
                customProperties: [
                    "question": .object(["text": .string("2+2?"), "answer": .number(4), "tags": .array([.bool(true), .null])]),
                    "x-Cue": .string("a \"b\", c"), "score": .number(-2.5e-3),
                ])),
            MediaItemCSV.Row(file: "001-ep.earsig", item: MediaItem(id: "ep", creationDate: Date(timeIntervalSince1970: 1_714_521_600))),
            MediaItemCSV.Row(reference: 3, item: MediaItem(id: "r3", title: "By index")),
        ]
        let parsed = try MediaItemCSV.parse(text: MediaItemCSV.render(rows))
        #expect(parsed.map(\.file) == rows.map(\.file))
        #expect(parsed.map(\.reference) == rows.map(\.reference))
        #expect(parsed.map(\.item) == rows.map(\.item))
    }

    @Test func fieldsListSetPropertiesInCSVSyntax() {
        let item = MediaItem(id: "q", title: "T", timeRanges: [14..<21], frequencySkewRanges: [-0.02 ..< -0.01],
                             customProperties: ["b": .number(1), "a": .string("x")])
        let fields = MediaItemCSV.fields(of: item)
        #expect(fields.map(\.name) == ["id", "title", "timeRanges", "frequencySkewRanges", "custom.a", "custom.b"])
        #expect(fields.map(\.value) == ["q", "T", "14-21", "-0.02..<-0.01", "\"x\"", "1"])
    }
}
