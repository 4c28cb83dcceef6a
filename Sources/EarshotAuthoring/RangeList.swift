import EarshotCore
import Foundation

/// `;`-separated half-open ranges: `a-b` (non-negative decimals) or `a..<b` (any finite numbers).
enum RangeList {
    static func parse(_ text: String, _ fail: (String) -> EarshotError) throws(EarshotError) -> [Range<Double>] {
        var ranges: [Range<Double>] = []
        for part in text.split(separator: ";") {
            let piece = part.trimmingCharacters(in: .whitespaces)
            if piece.isEmpty { continue }
            let bounds: (String, String)
            if let r = piece.range(of: "..<") {
                bounds = (String(piece[..<r.lowerBound]), String(piece[r.upperBound...]))
            } else {
                let halves = piece.split(separator: "-", omittingEmptySubsequences: false)
                guard halves.count == 2, halves.allSatisfy({ isPlainDecimal($0) }) else {
                    throw fail("\"\(piece)\" is not a range; write start-end (14-21) or, for negative numbers, start..<end (-0.02..<-0.01)")
                }
                bounds = (String(halves[0]), String(halves[1]))
            }
            guard let lo = number(bounds.0), let hi = number(bounds.1) else {
                throw fail("\"\(piece)\" has a bound that is not a number")
            }
            guard lo < hi else { throw fail("\"\(piece)\" is empty: the start must be below the end") }
            ranges.append(lo..<hi)
        }
        return ranges
    }

    static func render(_ ranges: [Range<Double>]) -> String {
        ranges.map { r in
            let lo = format(r.lowerBound), hi = format(r.upperBound)
            return isPlainDecimal(Substring(lo)) && isPlainDecimal(Substring(hi)) ? "\(lo)-\(hi)" : "\(lo)..<\(hi)"
        }.joined(separator: ";")
    }

    /// Digits with at most one decimal point: the only numbers the `a-b` form allows.
    private static func isPlainDecimal(_ s: Substring) -> Bool {
        let t = s.trimmingCharacters(in: .whitespaces)
        return !t.isEmpty && t.allSatisfy { $0.isASCII && ($0.isNumber || $0 == ".") }
            && t.filter { $0 == "." }.count <= 1 && t != "."
    }

    /// A finite decimal number (sign and exponent allowed; no hex, `inf` or `nan`).
    private static func number(_ s: String) -> Double? {
        let t = s.trimmingCharacters(in: .whitespaces)
        guard !t.isEmpty, t.allSatisfy({ $0.isASCII && ($0.isNumber || "+-.eE".contains($0)) }),
            let value = Double(t), value.isFinite
        else { return nil }
        return value
    }

    /// The shortest text that reads back as the same number; integers without ".0".
    static func format(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }
}
