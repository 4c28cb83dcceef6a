import EarshotAuthoring
import Testing

@Suite("RFC 8216 attribute lists")
struct AttributeListTests {
    private func error(_ text: String) -> AttributeListError? {
        do {
            _ = try AttributeList.parse(text)
            return nil
        } catch {
            return error
        }
    }

    @Test func everyValueKind() throws {
        let list = try AttributeList.parse(
            #"INT=42,HEX=0xFC3A,HEX2=0X1f,FLOAT=12.5,SIGNED=-0.25,SIGNEDINT=-3,TEXT="a, b=c",EMPTY="",ENUM=YES,RES=1920x1080,BIG=18446744073709551616"#)
        #expect(list.attributes.map(\.name) == ["INT", "HEX", "HEX2", "FLOAT", "SIGNED", "SIGNEDINT", "TEXT", "EMPTY", "ENUM", "RES", "BIG"])
        #expect(list["INT"] == AttributeValue(.decimalInteger, "42"))
        #expect(list["HEX"] == AttributeValue(.hexadecimalSequence, "0xFC3A"))
        #expect(list["HEX2"] == AttributeValue(.hexadecimalSequence, "0X1f"))
        #expect(list["FLOAT"] == AttributeValue(.decimalFloatingPoint, "12.5"))
        #expect(list["SIGNED"] == AttributeValue(.signedDecimalFloatingPoint, "-0.25"))
        #expect(list["SIGNEDINT"] == AttributeValue(.signedDecimalFloatingPoint, "-3"))
        #expect(list["TEXT"] == AttributeValue(.quotedString, "a, b=c"))
        #expect(list["EMPTY"] == AttributeValue(.quotedString, ""))
        #expect(list["ENUM"] == AttributeValue(.enumeratedString, "YES"))
        #expect(list["RES"] == AttributeValue(.decimalResolution, "1920x1080"))
        // Past 2^64 − 1 digits are no decimal-integer, but still a number.
        #expect(list["BIG"] == AttributeValue(.decimalFloatingPoint, "18446744073709551616"))
        #expect(list["MISSING"] == nil)
    }

    @Test func textIsKeptAsWritten() throws {
        let list = try AttributeList.parse("A=1.50,B=007,C=0x00ff,D=é-ÉNUM")
        #expect(list["A"]?.text == "1.50")
        #expect(list["B"] == AttributeValue(.decimalInteger, "007"))
        #expect(list["C"]?.text == "0x00ff")
        #expect(list["D"] == AttributeValue(.enumeratedString, "é-ÉNUM"))
    }

    @Test func nanInfinityAndExponentsAreEnumeratedStrings() throws {
        let list = try AttributeList.parse("A=NaN,B=inf,C=-inf,D=1e5,E=0x,F=1.2.3,G=-")
        for name in ["A", "B", "C", "D", "E", "F", "G"] {
            #expect(list[name]?.kind == .enumeratedString, "\(name)")
        }
    }

    @Test func renderReadsBackTheSame() throws {
        let list = AttributeList([
            .init("ID", .quoted("ad 1, \"the first\"".replacingOccurrences(of: "\"", with: "'"))),
            .init("N", AttributeValue(.decimalInteger, "0")), .init("H", AttributeValue(.hexadecimalSequence, "0xABCDEF0123")),
            .init("F", AttributeValue(.decimalFloatingPoint, "0.001")), .init("S", AttributeValue(.signedDecimalFloatingPoint, "-12.0")),
            .init("E", .enumerated("PRE")), .init("R", AttributeValue(.decimalResolution, "640x360")), .init("Q", .quoted("")),
            .init("U", .quoted("ünïcödé ✓")),
        ])
        let text = try list.render()
        #expect(text == #"ID="ad 1, 'the first'",N=0,H=0xABCDEF0123,F=0.001,S=-12.0,E=PRE,R=640x360,Q="",U="ünïcödé ✓""#)
        #expect(try AttributeList.parse(text) == list)
        #expect(try AttributeList.parse("") == AttributeList())
        #expect(try AttributeList().render() == "")
    }

    @Test func renderRefusesWhatWouldReadBackDifferently() {
        func reason(_ list: AttributeList) -> String? {
            do {
                _ = try list.render()
                return nil
            } catch {
                return error.reason
            }
        }
        #expect(reason(AttributeList([.init("X", .quoted("a\"b"))])) == #"the quoted string of X contains a quote ("), which it cannot hold"#)
        #expect(reason(AttributeList([.init("X", .quoted("a\nb"))])) == "the quoted string of X contains a line break")
        #expect(reason(AttributeList([.init("X", .enumerated("12"))])) == #"X: "12" does not read as enumerated-string (it reads as decimal-integer)"#)
        #expect(reason(AttributeList([.init("X", .enumerated("A B"))])) == "X: a space in an unquoted value")
        #expect(reason(AttributeList([.init("X", AttributeValue(.decimalInteger, ""))])) == "X has an empty decimal-integer")
        #expect(reason(AttributeList([.init("x", .enumerated("A"))])) == #"attribute name "x" has lowercase letters; names are upper case (A–Z, 0–9 and -)"#)
        #expect(reason(AttributeList([.init("A", .enumerated("B")), .init("A", .enumerated("C"))])) == "A given twice in one tag")
    }

    @Test func parseValueAlone() throws {
        #expect(try AttributeList.parseValue(#""quoted, text""#, of: "X") == .quoted("quoted, text"))
        #expect(try AttributeList.parseValue("0x1F", of: "X") == AttributeValue(.hexadecimalSequence, "0x1F"))
        #expect(try AttributeList.parseValue("1.5", of: "X") == AttributeValue(.decimalFloatingPoint, "1.5"))
        #expect(try AttributeList.parseValue("ENUM", of: "X") == .enumerated("ENUM"))
        #expect(throws: AttributeListError(column: 2, reason: #"X: a "," ends the value; quote text that holds commas"#)) {
            try AttributeList.parseValue("A,B", of: "X")
        }
        #expect(throws: AttributeListError(column: 1, reason: #"X has no value after "=""#)) { try AttributeList.parseValue("", of: "X") }
    }

    // MARK: Hostile input: the exact error and column.

    @Test func unterminatedQuotedString() {
        // A forgotten closing quote: the next quote closes it, and the text after it is wrong.
        #expect(error(#"ID="ad1,CLASS="x""#) == AttributeListError(column: 16, reason: "ID: text after the closing quote; a quoted string is the whole value"))
        #expect(error(#"ID="ad1"#) == AttributeListError(column: 4, reason: "unterminated quoted string in ID"))
        #expect(error(#"A=1,B=""#) == AttributeListError(column: 7, reason: "unterminated quoted string in B"))
    }

    @Test func lineBreaksAndControlCharactersInQuotedStrings() {
        #expect(error("ID=\"a\nb\"") == AttributeListError(column: 6, reason: "the quoted string of ID contains a line break"))
        #expect(error("ID=\"a\rb\"") == AttributeListError(column: 6, reason: "the quoted string of ID contains a line break"))
        #expect(error("ID=\"a\u{0}b\"") == AttributeListError(column: 6, reason: "the quoted string of ID contains the control character U+0000"))
        #expect(error("ID=\"a\u{85}\"") == AttributeListError(column: 6, reason: "the quoted string of ID contains the control character U+0085"))
    }

    @Test func missingEqualsAndEmptyNames() {
        #expect(error("ID") == AttributeListError(column: 1, reason: #"attribute "ID" has no "=" and value"#))
        #expect(error("A=1,B,C=2") == AttributeListError(column: 5, reason: #"attribute "B" has no "=" and value"#))
        #expect(error("=5") == AttributeListError(column: 1, reason: #"empty attribute name before "=""#))
        #expect(error("A=1,,B=2") == AttributeListError(column: 5, reason: "empty attribute (two commas in a row, or a comma at the end)"))
        #expect(error("A=1,") == AttributeListError(column: 4, reason: "empty attribute (two commas in a row, or a comma at the end)"))
        #expect(error(",A=1") == AttributeListError(column: 1, reason: "empty attribute (two commas in a row, or a comma at the end)"))
        #expect(error("A=,B=1") == AttributeListError(column: 3, reason: #"A has no value after "=""#))
        #expect(error("A=") == AttributeListError(column: 3, reason: #"A has no value after "=""#))
    }

    @Test func badNames() {
        #expect(error("x=1") == AttributeListError(column: 1, reason: #"attribute name "x" has lowercase letters; names are upper case (A–Z, 0–9 and -)"#))
        #expect(error("A=1,X-Com=2") == AttributeListError(column: 5, reason: #"attribute name "X-Com" has lowercase letters; names are upper case (A–Z, 0–9 and -)"#))
        #expect(error("A=1, B=2") == AttributeListError(column: 5, reason: #"attribute name " B" has a space; attribute lists have no spaces around "," and "=""#))
        #expect(error("A_B=1") == AttributeListError(column: 1, reason: #"attribute name "A_B" has the character "_"; names use only A–Z, 0–9 and -"#))
        #expect(error("ÄB=1") == AttributeListError(column: 1, reason: #"attribute name "ÄB" has the character "Ä"; names use only A–Z, 0–9 and -"#))
    }

    @Test func duplicateAttribute() {
        #expect(error(#"ID="a",CLASS="b",ID="c""#) == AttributeListError(column: 18, reason: "ID given twice in one tag"))
    }

    @Test func badUnquotedValues() {
        #expect(error("A=1 ,B=2") == AttributeListError(column: 4, reason: "A: a space in an unquoted value; quote text that holds spaces"))
        #expect(error("A=x\"y\"") == AttributeListError(column: 4, reason: "A: a quote inside an unquoted value; quote the whole value"))
        #expect(error("A=\t1") == AttributeListError(column: 3, reason: "A: a tab in an unquoted value; quote text that holds spaces"))
        #expect(error("A=1\u{1}") == AttributeListError(column: 4, reason: "A: the character U+0001 in the value"))
    }

    @Test func hugeInputIsLinear() throws {
        let many = (0..<5000).map { "X-A\($0)=\($0)" }.joined(separator: ",")
        #expect(try AttributeList.parse(many).attributes.count == 5000)
        let long = "X=\"" + String(repeating: "a", count: 200_000) + "\""
        #expect(try AttributeList.parse(long)["X"]?.text.count == 200_000)
        #expect(error("X=\"" + String(repeating: "a", count: 200_000)) == AttributeListError(column: 3, reason: "unterminated quoted string in X"))
    }

    @Test func errorDescription() {
        #expect(AttributeListError(column: 4, reason: "why").description == "column 4: why")
        #expect(AttributeListError(column: nil, reason: "why").description == "why")
    }
}
