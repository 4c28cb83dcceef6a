import EarshotCore
import EarshotTestSupport
import Foundation
import Testing

/// The core's Foundation-free text helpers agree with the Foundation calls they stand in for.
struct TextFormattingTests {
    @Test func decimalTextWritesWhatPrintfWrites() {
        var random = SeededRandom(seed: 7)
        for _ in 0..<20_000 {
            let magnitude = [1e-3, 1.0, 100.0, 1e4, 1e6][Int.random(in: 0..<5, using: &random)]
            let value = Double.random(in: -magnitude...magnitude, using: &random)
            let places = Int.random(in: 0...6, using: &random)
            #expect(value.decimalText(places: places) == String(format: "%.\(places)f", value), "\(value), \(places) places")
            #expect(value.decimalText(places: places, signed: true) == String(format: "%+.\(places)f", value), "\(value), \(places) places, signed")
        }
        // Exact halves round to even, as glibc's printf does.
        for eighths in -80...80 {
            let value = Double(eighths) / 8
            for places in 0...3 {
                #expect(value.decimalText(places: places) == String(format: "%.\(places)f", value), "\(value), \(places) places")
            }
        }
    }

    @Test func decimalTextEdges() {
        #expect(2.0.decimalText(places: 0) == "2")
        #expect(0.5.decimalText(places: 0) == "0")
        #expect((-0.001).decimalText(places: 2) == "-0.00")
        #expect(3.96.decimalText(places: 2, signed: true) == "+3.96")
        #expect(0.0.decimalText(places: 1, signed: true) == "+0.0")
        #expect(0.1234567890123.decimalText(places: 13) == "0.1234567890123")
        #expect(Double.nan.decimalText(places: 2) == "nan")
        #expect((-Double.infinity).decimalText(places: 2) == "-inf")
        #expect(Double.infinity.decimalText(places: 2, signed: true) == "+inf")
        #expect(1e300.decimalText(places: 2) == "1e+300")
    }

    @Test func trimmingWhitespaceMatchesFoundation() {
        for text in ["", " ", "\n\t x y \r\n", "{}", "  {\"a\": 1}\n", "\u{00A0}é\u{2003}", "x"] {
            #expect(String(text.trimmingWhitespace()) == text.trimmingCharacters(in: .whitespacesAndNewlines), "\(text.debugDescription)")
        }
        #expect(" a b "[...].trimmingWhitespace() == "a b")
    }
}
