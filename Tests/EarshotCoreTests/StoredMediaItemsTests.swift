import Foundation
import Testing

@testable import EarshotCore

/// The hand-written reader of a catalog's stored media items must read exactly what
/// Foundation's encoder writes and what Foundation's decoder read before it, and refuse what
/// is not JSON with an error that says where.
struct StoredMediaItemsTests {
    static func decode(_ text: String) throws -> [MediaItem] {
        try Array(text.utf8).withUnsafeBytes { try StoredMediaItems.decode($0) }
    }

    static func decodeWithFoundation(_ bytes: [UInt8]) throws -> [MediaItem] {
        struct Wrapper: Decodable { var mediaItems: [MediaItem] }
        return try JSONCoding.decoder.decode(Wrapper.self, from: Data(bytes)).mediaItems
    }

    /// Items with every field, odd strings (escapes, quotes, non-ASCII, astral-plane emoji),
    /// extreme numbers and nested custom properties round-trip, and agree with `JSONDecoder`.
    @Test func readsWhatTheEncoderWritesAsFoundationDoes() throws {
        var rng = SystemRandomNumberGenerator()
        let words = ["", "plain", "quote \" and \\ backslash", "tab\tnew\nline\u{01}", "slash / é ü 日本 🎵", "\u{7F}"]
        func word() -> String { words.randomElement(using: &rng)! }
        func value(_ depth: Int) -> JSONValue {
            switch Int.random(in: 0..<(depth > 2 ? 4 : 6), using: &rng) {
            case 0: .null
            case 1: .bool(Bool.random(using: &rng))
            case 2: .number([0, -1, 1.5, 1e-300, 1.7976931348623157e308, 123456789012345, -0.001].randomElement(using: &rng)!)
            case 3: .string(word())
            case 4: .array((0..<Int.random(in: 0...3, using: &rng)).map { _ in value(depth + 1) })
            default: .object(Dictionary(uniqueKeysWithValues: (0..<Int.random(in: 0...3, using: &rng)).map { ("k\($0)\(word())", value(depth + 1)) }))
            }
        }
        for _ in 0..<200 {
            let items = (0..<Int.random(in: 0...3, using: &rng)).map { i in
                MediaItem(
                    id: "item \(i) \(word())", title: Bool.random() ? word() : nil, subtitle: Bool.random() ? word() : nil,
                    artist: Bool.random() ? word() : nil, genres: (0..<Int.random(in: 0...2)).map { _ in word() },
                    isrc: Bool.random() ? "GBAYE0601498" : nil, artworkURL: Bool.random() ? "https://e.x/a.jpg?q=1&r=/2" : nil,
                    videoURL: nil, webURL: Bool.random() ? "http://e.x/" : nil, explicitContent: [nil, true, false].randomElement()!,
                    creationDate: Bool.random() ? Date(timeIntervalSince1970: Double.random(in: -1e9...2e9).rounded() / 8) : nil,
                    timeRanges: (0..<Int.random(in: 0...2)).map { Double($0) * 30.25..<Double($0) * 30.25 + 12.5 },
                    frequencySkewRanges: Bool.random() ? [-0.05..<0.05] : [],
                    customProperties: Dictionary(uniqueKeysWithValues: (0..<Int.random(in: 0...3)).map { ("p\($0)", value(0)) }))
            }
            let bytes = try StoredMediaItems.encode(items)
            let mine = try bytes.withUnsafeBytes { try StoredMediaItems.decode($0) }
            #expect(mine == items)
            #expect(mine == (try Self.decodeWithFoundation(bytes)))
        }
    }

    /// Whitespace, escaped forms of plain characters, explicit nulls and unknown fields (a later
    /// version's) are read; a missing list is empty.
    @Test func readsEveryFormJSONAllows() throws {
        let text = """
             { "future": {"x": [1, 2, {"y": null}]},
               "mediaItems" : [ { "id" : "a\\u00e9\\ud83c\\udfb5\\/", "title": null, "explicitContent": false,
                                  "creationDate": "2024-05-01", "timeRanges": [[0, 1E+1]], "genres": ["x"],
                                  "customProperties": {"n": -0.5e-2, "t": true, "z": 0}, "new": "ignored" },
                                {"id": "b"} ] }\t\r\n
            """
        let items = try Self.decode(text)
        #expect(items.count == 2)
        #expect(items[0].id == "aé🎵/")
        #expect(items[0].title == nil && items[0].explicitContent == false)
        #expect(items[0].creationDate == ISODate.parse("2024-05-01"))
        #expect(items[0].timeRanges == [0..<10] && items[0].genres == ["x"])
        #expect(items[0].customProperties == ["n": .number(-0.005), "t": .bool(true), "z": .number(0)])
        #expect(items[1] == MediaItem(id: "b"))
    }

    /// Text that is not JSON, or not media items, fails with where and why.
    @Test func refusesWhatIsNotValidAndSaysWhere() {
        let cases: [(String, String)] = [
            ("", "unexpected end"),
            ("###", "expected an object"),
            (#"{"mediaItems": []} x"#, "unexpected text after the value"),
            (#"{"mediaItems": [],}"#, "expected a key"),
            (#"{"mediaItems": [{"id": "a",}]}"#, "expected a key"),
            (#"{"mediaItems": [{"id": "a"}"#, "unexpected end"),
            (#"{"other": 1}"#, #"the field "mediaItems" is missing"#),
            (#"{"mediaItems": [{"title": "t"}]}"#, #"mediaItems[0]: the field "id" is missing"#),
            (#"{"mediaItems": [{"id": "a"}, {"id": 5}]}"#, "mediaItems[1].id: expected a string"),
            (#"{"mediaItems": [{"id": "a", "explicitContent": 1}]}"#, "mediaItems[0].explicitContent: expected true or false"),
            (#"{"mediaItems": [{"id": "a", "creationDate": "2023-02-30"}]}"#, "mediaItems[0].creationDate: \"2023-02-30\" is not an ISO 8601"),
            (#"{"mediaItems": [{"id": "a", "timeRanges": [[5, 1]]}]}"#, "mediaItems[0].timeRanges: a range must be"),
            (#"{"mediaItems": [{"id": "a", "timeRanges": [[1]]}]}"#, "mediaItems[0].timeRanges: a range must be"),
            (#"{"mediaItems": [{"id": "a", "customProperties": {"n": 01}}]}"#, "leading zero"),
            (#"{"mediaItems": [{"id": "a", "customProperties": {"n": 1.}}]}"#, "expected digits after '.'"),
            (#"{"mediaItems": [{"id": "a", "customProperties": {"n": 1e999}}]}"#, "number out of range"),
            (#"{"mediaItems": [{"id": "a", "customProperties": {"n": NaN}}]}"#, "expected a value"),
            (#"{"mediaItems": [{"id": "a", "customProperties": {"n": tru}}]}"#, "invalid literal"),
            (#"{"mediaItems": [{"id": "a\x"}]}"#, "invalid escape"),
            (#"{"mediaItems": [{"id": "\ud800"}]}"#, "unpaired surrogate"),
            (#"{"mediaItems": [{"id": "\u12"}]}"#, "invalid \\u escape"),
            ("{\"mediaItems\": [{\"id\": \"a\tb\"}]}", "control character"),
            (#"{"mediaItems": [{"id": "abc"#, "unterminated string"),
        ]
        for (text, expected) in cases {
            do {
                let items = try Self.decode(text)
                Issue.record("\(text) decoded as \(items)")
            } catch {
                #expect(error is JSONReader.Failure)
                #expect("\(error)".contains(expected), "\(text): \(error)")
            }
        }
    }

    /// Bytes that are not UTF-8 inside a string are refused, with and without escapes around them.
    @Test func refusesInvalidUTF8() {
        for tail in [[0xFF], [0xC3], [0x5C, 0x6E, 0xE2, 0x82]] as [[UInt8]] {
            let bytes = Array(#"{"mediaItems": [{"id": "a"#.utf8) + tail + Array(#""}]}"#.utf8)
            #expect(throws: JSONReader.Failure.self) { try bytes.withUnsafeBytes { try StoredMediaItems.decode($0) } }
        }
    }

    /// Nesting is bounded, so crafted metadata cannot exhaust the stack.
    @Test func deepNestingIsRefusedNotACrash() {
        let depth = 100_000
        let text = #"{"mediaItems": [{"id": "a", "customProperties": {"n": "# + String(repeating: "[", count: depth)
            + String(repeating: "]", count: depth) + "}}]}"
        #expect(throws: JSONReader.Failure.self) { try Self.decode(text) }
        let fine = #"{"mediaItems": [{"id": "a", "customProperties": {"n": "# + String(repeating: "[", count: 100)
            + String(repeating: "]", count: 100) + "}}]}"
        #expect((try? Self.decode(fine))?.first?.id == "a")
    }
}
