import EarshotCore
import Foundation

/// A time as an exact decimal: whole seconds and the digits after the point. Cue times travel
/// as dates (`START-DATE` = origin + start), and a `Double` of seconds since 1970 cannot hold a
/// millisecond exactly; adding and subtracting the digits instead gives back exactly the
/// decimal that was added, so a cue's start survives export and import bit for bit.
struct DecimalTime: Equatable {
    /// Whole seconds (since 1970-01-01T00:00:00Z for an instant); may be negative.
    var whole: Int
    /// Digits 0–9 after the point, without trailing zeros; the value is `whole + 0.fraction`.
    var fraction: [UInt8]

    init(whole: Int, fraction: [UInt8]) {
        self.whole = whole
        var digits = fraction
        while digits.last == 0 { digits.removeLast() }
        self.fraction = digits
    }

    /// Seconds from 1970 to 2001, the reference date of `Date`.
    private static let referenceOffset = 978_307_200

    // MARK: Seconds

    /// `seconds` (finite, 0 or more, below 10^15) as the shortest decimal that reads back as it.
    init?(seconds: Double) {
        guard seconds.isFinite, seconds >= 0, seconds < 1e15 else { return nil }
        let text = DecimalText.plain(seconds)
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard let whole = Int(parts[0]) else { return nil }
        self.init(whole: whole, fraction: parts.count > 1 ? parts[1].utf8.map { $0 - 0x30 } : [])
    }

    /// The nearest `Double` (correctly rounded from the exact digits).
    var seconds: Double? {
        let value = Double(text)
        return value.flatMap { $0.isFinite ? $0 : nil }
    }

    /// "12.5", "-3", "0.001".
    var text: String {
        if whole < 0, !fraction.isEmpty {
            // −2 + 0.25 = −1.75: show the magnitude's digits.
            let magnitude = DecimalTime(whole: 0, fraction: []) - self
            return "-" + magnitude.text
        }
        return String(whole) + (fraction.isEmpty ? "" : "." + String(decoding: fraction.map { $0 + 0x30 }, as: UTF8.self))
    }

    static func + (a: DecimalTime, b: DecimalTime) -> DecimalTime {
        let n = max(a.fraction.count, b.fraction.count)
        var digits = [UInt8](repeating: 0, count: n)
        var carry: UInt8 = 0
        for k in stride(from: n - 1, through: 0, by: -1) {
            let sum = (k < a.fraction.count ? a.fraction[k] : 0) + (k < b.fraction.count ? b.fraction[k] : 0) + carry
            digits[k] = sum % 10
            carry = sum / 10
        }
        return DecimalTime(whole: a.whole + b.whole + Int(carry), fraction: digits)
    }

    static func - (a: DecimalTime, b: DecimalTime) -> DecimalTime {
        let n = max(a.fraction.count, b.fraction.count)
        var digits = [UInt8](repeating: 0, count: n)
        var borrow: Int = 0
        for k in stride(from: n - 1, through: 0, by: -1) {
            var d = Int(k < a.fraction.count ? a.fraction[k] : 0) - Int(k < b.fraction.count ? b.fraction[k] : 0) - borrow
            borrow = d < 0 ? 1 : 0
            if d < 0 { d += 10 }
            digits[k] = UInt8(d)
        }
        return DecimalTime(whole: a.whole - b.whole - borrow, fraction: digits)
    }

    var isNegative: Bool { whole < 0 }

    // MARK: Instants

    /// An ISO 8601 date-time with a zone and any number of fraction digits
    /// (`2024-05-01T20:15:00.125Z`, `…T22:15:00+02:00`), or with `allowDateOnly` a date
    /// (`2024-05-01`, midnight UTC). The calendar is `ISODate`'s; the fraction is kept as written.
    init?(instant text: String, allowDateOnly: Bool = false) {
        var u = Array(text.utf8)
        var digits: [UInt8] = []
        if u.count == 10 {
            guard allowDateOnly else { return nil }
        } else if u.count > 19, u[10] == 0x54, u[19] == 0x2E {  // "T", "."
            var end = 20
            while end < u.count, (0x30...0x39).contains(u[end]) { end += 1 }
            guard end > 20 else { return nil }
            digits = u[20..<end].map { $0 - 0x30 }
            u.removeSubrange(19..<end)
        }
        guard let date = ISODate.parse(String(decoding: u, as: UTF8.self)) else { return nil }
        let interval = date.timeIntervalSinceReferenceDate  // whole seconds: exact
        guard interval.isFinite, abs(interval) < 1e13 else { return nil }
        self.init(whole: Int(interval) + Self.referenceOffset, fraction: digits)
    }

    /// The instant `date` names, with the digits `ISODate` renders for it (the fewest that
    /// read back the same `Date`).
    init?(date: Date) {
        self.init(instant: ISODate.render(date), allowDateOnly: true)
    }

    /// `2024-05-01T20:15:00.125Z`: UTC, at least `minimumFractionDigits` digits after the point
    /// (more when the instant needs them); nil outside the years 0000–9999.
    func isoText(minimumFractionDigits: Int = 3) -> String? {
        let base = ISODate.render(Date(timeIntervalSinceReferenceDate: Double(whole - Self.referenceOffset)))
        let u = Array(base.utf8)
        let dateTime: String
        switch u.count {
        case 10: dateTime = base + "T00:00:00"
        case 20 where u.last == 0x5A: dateTime = String(decoding: u.dropLast(), as: UTF8.self)
        default: return nil
        }
        let shown = fraction + [UInt8](repeating: 0, count: max(0, minimumFractionDigits - fraction.count))
        let text = dateTime + (shown.isEmpty ? "" : "." + String(decoding: shown.map { $0 + 0x30 }, as: UTF8.self)) + "Z"
        // A year outside 0000–9999 renders in a form that does not read back.
        return DecimalTime(instant: text) == self ? text : nil
    }
}

/// Numbers as attribute lists and the cue CSV write them: positional decimals (never
/// `1e-05`), with the shortest digits that read back as the same `Double`.
enum DecimalText {
    static func plain(_ value: Double) -> String {
        guard value.isFinite else { return "\(value)" }
        if value == 0 { return "0" }  // also -0: "-0" would read as a signed number
        var text = "\(value)"  // Swift prints the shortest digits that round-trip
        var sign = ""
        if text.hasPrefix("-") {
            sign = "-"
            text.removeFirst()
        }
        var exponent = 0
        if let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            exponent = Int(text[text.index(after: e)...]) ?? 0
            text = String(text[..<e])
        }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        var integer = Array(parts[0]), fraction = parts.count > 1 ? Array(parts[1]) : []
        if exponent > 0 {
            let moved = min(exponent, fraction.count)
            integer += fraction.prefix(moved)
            fraction.removeFirst(moved)
            integer += [Character](repeating: "0", count: exponent - moved)
        } else if exponent < 0 {
            let moved = min(-exponent, integer.count)
            fraction = Array(integer.suffix(moved)) + fraction
            integer.removeLast(moved)
            fraction = [Character](repeating: "0", count: -exponent - moved) + fraction
        }
        while integer.count > 1, integer.first == "0" { integer.removeFirst() }
        if integer.isEmpty { integer = ["0"] }
        while fraction.last == "0" { fraction.removeLast() }
        return sign + String(integer) + (fraction.isEmpty ? "" : "." + String(fraction))
    }
}
