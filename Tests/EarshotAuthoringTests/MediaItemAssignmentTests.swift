import EarshotAuthoring
import EarshotCore
import Testing

@Suite("Media-items CSV rows to catalog references")
struct MediaItemAssignmentTests {
    private func rows(_ text: String) throws -> [MediaItemCSV.Row] { try MediaItemCSV.parse(text: text) }

    private func assignError(_ text: String, inputs: [String], existing: Int? = nil) -> String? {
        do {
            _ = try MediaItemCSV.assign(try rows(text), inputs: inputs, existingReferenceCount: existing)
            return nil
        } catch let error as EarshotError {
            return error.message
        } catch {
            return "\(error)"
        }
    }

    @Test func inputsWithoutRowsGetDefaultItems() throws {
        let a = try MediaItemCSV.assign([], inputs: ["dir/intro.wav", "ep1.earsig"])
        #expect(a.inputItems == [[MediaItem(id: "intro", title: "intro")], [MediaItem(id: "ep1", title: "ep1")]])
        #expect(a.referenceItems.isEmpty)
    }

    @Test func rowsGoToTheInputTheyNameAndKeepOrder() throws {
        let text = "signature,id,title\nep.wav,q1,One\nintro.wav,,Intro\nep.wav,q2,Two\n"
        let a = try MediaItemCSV.assign(try rows(text), inputs: ["music/intro.wav", "music/ep.wav", "other.wav"])
        #expect(a.inputItems[0].map(\.id) == ["intro"])
        #expect(a.inputItems[1].map(\.id) == ["q1", "q2"])
        #expect(a.inputItems[2] == [MediaItem(id: "other", title: "other")])
    }

    @Test func fileNameWithoutExtensionAlsoMatches() throws {
        // The CSV was written for the audio, the catalog is built from its signature.
        let a = try MediaItemCSV.assign(try rows("signature,title\nep.wav,Episode\n"), inputs: ["ep.earsig", "x.wav"])
        #expect(a.inputItems[0].map(\.title) == ["Episode"])
    }

    @Test func severalRowsWithoutIDsGetNumberedIDs() throws {
        let a = try MediaItemCSV.assign(try rows("signature,timeRanges\nep.wav,0-10\nep.wav,10-20\n"), inputs: ["ep.wav"])
        #expect(a.inputItems[0].map(\.id) == ["ep-1", "ep-2"])
    }

    @Test func singleInputNeedsNoSignatureColumn() throws {
        let a = try MediaItemCSV.assign(try rows("id,title\nq1,One\nq2,Two\n"), inputs: ["ep.wav"])
        #expect(a.inputItems[0].map(\.id) == ["q1", "q2"])
    }

    @Test func updateRowsNameExistingReferences() throws {
        let text = "signature,reference,id,title\n,1,a,By index\n002-intro.earsig,,b,By export name\nnew.wav,,c,New\n"
        let a = try MediaItemCSV.assign(try rows(text), inputs: ["new.wav"], existingReferenceCount: 3)
        #expect(a.referenceItems[1]?.map(\.id) == ["a"])
        #expect(a.referenceItems[2]?.map(\.id) == ["b"])
        #expect(a.inputItems == [[MediaItem(id: "c", title: "New")]])
    }

    @Test(arguments: [
        ("signature,title\nmissing.wav,X\n", ["a.wav"], nil as Int?, "line 2, column signature: \"missing.wav\" names no input file"),
        ("title\nX\n", ["a.wav", "b.wav"], nil, "line 2, column signature: the row names no input file"),
        ("signature,title\nx.wav,X\n", ["a/x.wav", "b/x.wav"], nil, "line 2, column signature: \"x.wav\" matches several inputs"),
        ("signature,id\na.wav,same\nb.wav,same\n", ["a.wav", "b.wav"], nil, "line 3, column id: id \"same\" is already used on line 2"),
        ("signature,id\na.wav,b\n", ["a.wav", "b.wav"], nil, "line 2, column id: id \"b\" is also the default id of input b.wav"),
        ("reference,id\n0,x\n", ["a.wav"], nil, "line 2, column reference: a reference index is only valid when updating"),
        ("reference,id\n5,x\n", [], 2, "line 2, column reference: the catalog has no reference 5"),
        ("signature,reference,id\na.wav,0,x\n", ["a.wav"], 2, "line 2: give either a signature file or a reference index"),
        ("signature,id\n009-x.earsig,x\n", [], 2, "line 2, column signature: \"009-x.earsig\" names no input file"),
        ("signature,timeRanges\na.wav,1-2\n", ["a.wav"], nil, "!"),
    ])
    func rowsThatCannotBePlacedNameTheirLine(text: String, inputs: [String], existing: Int?, expected: String) {
        let message = assignError(text, inputs: inputs, existing: existing)
        if expected == "!" {
            #expect(message == nil)
        } else {
            #expect(message?.hasPrefix(expected) == true, "got: \(message ?? "no error")")
        }
    }

    @Test func inputsWithTheSameNameCannotShareADefaultID() {
        #expect {
            _ = try MediaItemCSV.assign([], inputs: ["a/x.wav", "b/x.wav"])
        } throws: { error in
            (error as? EarshotError)?.message.hasPrefix("b/x.wav: has the same name as a/x.wav") == true
        }
    }
}
