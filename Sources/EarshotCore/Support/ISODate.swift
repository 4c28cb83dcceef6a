import FoundationEssentials

/// ISO 8601 dates (`2024-05-01`, midnight UTC) and date-times with a zone (`…T20:15:00Z`,
/// `…T20:15:00.250+02:00`). Parsed by hand so that impossible dates (February 30) are refused
/// rather than rolled over, and rendered by hand so that the two agree: both use the proleptic
/// Gregorian calendar (as ISO 8601 does; Foundation's formatter switches to the Julian calendar
/// before 1582), and a rendered date parses back to exactly the same `Date`.
///
/// The one date codec of Earshot: the media-items CSV, the catalog format's metadata and the
/// wire all read and write dates with it, so a date survives any round trip between them,
/// fractional seconds included.
public enum ISODate {
    /// Seconds from 1970-01-01 to 2001-01-01, the reference date `Date` counts from.
    private static let referenceOffset = 978_307_200

    /// The date `text` names, or nil if it is not one of the forms above (or names no real day).
    public static func parse(_ text: String) -> Date? {
        let c = Array(text.utf8)
        func digits(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= c.count else { return nil }
            var value = 0
            for i in range {
                guard (0x30...0x39).contains(c[i]) else { return nil }
                value = value * 10 + Int(c[i] - 0x30)
            }
            return value
        }
        func byte(_ i: Int, _ expected: Character) -> Bool { i < c.count && c[i] == expected.asciiValue }
        guard let year = digits(0..<4), byte(4, "-"), let month = digits(5..<7), byte(7, "-"), let day = digits(8..<10),
            (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day)
        else { return nil }
        // Whole seconds are counted exactly in integers; the fraction is added last, once.
        var seconds = daysSinceEpoch(year: year, month: month, day: day) * 86_400
        var fraction = 0.0
        if c.count == 10 { return date(seconds, fraction) }

        guard byte(10, "T"), let hour = digits(11..<13), byte(13, ":"), let minute = digits(14..<16), byte(16, ":"),
            let second = digits(17..<19), hour < 24, minute < 60, second < 60
        else { return nil }
        seconds += hour * 3600 + minute * 60 + second
        var i = 19
        if byte(i, ".") {
            let first = i + 1
            i = first
            while i < c.count, (0x30...0x39).contains(c[i]) { i += 1 }
            guard i > first, let value = Double("0." + String(decoding: c[first..<i], as: UTF8.self)) else { return nil }
            fraction = value
        }
        if byte(i, "Z") {
            i += 1
        } else if byte(i, "+") || byte(i, "-") {
            guard let h = digits((i + 1)..<(i + 3)), byte(i + 3, ":"), let m = digits((i + 4)..<(i + 6)), h < 24, m < 60
            else { return nil }
            let offset = h * 3600 + m * 60
            seconds += byte(i, "+") ? -offset : offset
            i += 6
        } else {
            return nil  // a date-time without a zone is ambiguous
        }
        return i == c.count ? date(seconds, fraction) : nil
    }

    /// UTC, with as few parts as the value needs: a date at midnight, whole seconds, or the
    /// fraction with every digit needed to read back the same `Date`.
    public static func render(_ date: Date) -> String {
        let interval = date.timeIntervalSinceReferenceDate
        guard interval.isFinite, abs(interval) < 1e14 else { return "" }
        let whole = interval.rounded(.down)
        let fraction = interval - whole  // exact: whole is interval's integer part
        let seconds = Int(whole) + referenceOffset
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let timeOfDay = seconds - days * 86_400
        let (year, month, day) = civil(daysSinceEpoch: days)
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        // Four digits, as `parse` reads (a year outside 0…9999 cannot come from a CSV).
        let yearText = (0...9999).contains(year) ? String(repeating: "0", count: 4 - String(year).count) + String(year) : String(year)
        var text = "\(yearText)-\(two(month))-\(two(day))"
        if timeOfDay == 0, fraction == 0 { return text }
        text += "T\(two(timeOfDay / 3600)):\(two(timeOfDay / 60 % 60)):\(two(timeOfDay % 60))"
        if fraction > 0 { text += "." + shortestDigits(of: fraction, after: whole, reading: interval) }
        return text + "Z"
    }

    /// The fewest decimals of `fraction` that `parse` (whole + 0.digits) turns back into
    /// `interval` exactly: "25" for a quarter, not the 16 digits of the binary value.
    private static func shortestDigits(of fraction: Double, after whole: Double, reading interval: Double) -> String {
        for places in 1...17 {
            let rounded = fraction.decimalText(places: places)
            guard rounded.hasPrefix("0."), let value = Double(rounded), whole + value == interval else { continue }
            var digits = rounded.dropFirst(2)
            while digits.count > 1, digits.last == "0" { digits = digits.dropLast() }
            return String(digits)
        }
        return String(plainDecimal(fraction).dropFirst(2))
    }

    /// The `Date` for whole seconds since 1970 plus a fraction: the integer part is moved to the
    /// reference date exactly, so `render` (which splits the same way) gets back the same digits.
    private static func date(_ secondsSince1970: Int, _ fraction: Double) -> Date {
        Date(timeIntervalSinceReferenceDate: Double(secondsSince1970 - referenceOffset) + fraction)
    }

    /// `value` (in [0, 1)) as "0.ddd…" with the shortest digits that read back the same, never in
    /// exponent notation.
    private static func plainDecimal(_ value: Double) -> String {
        let text = "\(value)"
        guard let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }), let exponent = Int(text[text.index(after: e)...]) else {
            return text
        }
        let digits = text[..<e].filter(\.isNumber)  // mantissa d.ddd → "dddd", value = 0.dddd × 10^(exponent + 1)
        return "0." + String(repeating: "0", count: max(0, -exponent - 1)) + digits
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 in the proleptic Gregorian calendar (the "days from civil" method).
    private static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The inverse of `daysSinceEpoch`.
    static func civil(daysSinceEpoch days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153  // March = 0
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
