import EarshotCore
import Foundation

/// Cues as an HLS media playlist (`.m3u8`, RFC 8216): one `#EXT-X-DATERANGE` tag per cue, as
/// the interstitials of a programme are scheduled.
///
/// **Reading.** The text must be UTF-8 and start with `#EXTM3U`; it has no byte order mark and
/// no control characters (RFC 8216 §4.1). Every `#EXT-X-DATERANGE` becomes a cue; other tags,
/// comments and segment lines are ignored. `START-DATE` is placed on the reference's timeline
/// as `start = START-DATE − origin`: the origin is the one given, else the first
/// `#EXT-X-PROGRAM-DATE-TIME` before the first media segment (the playlist's start). `END-DATE`
/// gives `duration = END-DATE − START-DATE` (with `DURATION` too, the two must agree within a
/// millisecond). Dates are ISO 8601 date-times with a zone; the arithmetic is exact in decimal.
/// The attributes Earshot models map onto `Cue`'s fields (`CueField`); every other attribute
/// (`X-COM-…`, `SCTE35-*`, anything) is kept in `attributes` with its kind. A tag repeating an
/// ID adds attributes to the cue of the earlier one; giving an attribute a different value is
/// an error (RFC 8216 §4.3.2.7). The cues are then checked as a catalog stores them
/// (`CueSchedule`). Any error means no cues: `EarshotError.catalogInvalid("line N: …")`.
///
/// **Writing.** `#EXTM3U`, `#EXT-X-VERSION`, `#EXT-X-TARGETDURATION`, `#EXT-X-PLAYLIST-TYPE:VOD`,
/// the origin as `#EXT-X-PROGRAM-DATE-TIME` (2000-01-01T00:00:00.000Z unless one is given),
/// the cues' tags in timeline order, and one segment (`reference.ts`) as long as the reference,
/// then `#EXT-X-ENDLIST`. `START-DATE` is written to the millisecond, with more digits when the
/// start needs them: the digits are the shortest decimal of the start's `Double` (12.5 →
/// `.500`; 0.1 + 0.2 → `.30000000000000004`), added exactly to the origin, so reading the
/// playlist back gives the same `Double`. Numbers are written the same way (positional, never
/// with an exponent). `parse(render(cues))` gives back `cues` in timeline order.
public enum CuePlaylist {
    /// The origin written when none is given: 2000-01-01T00:00:00Z.
    public static let defaultOrigin = Date(timeIntervalSince1970: 946_684_800)

    /// The name of the one segment a written playlist has, standing for the whole reference.
    public static let segmentURI = "reference.ts"

    /// Reads a playlist file's bytes (see `parse(text:…)`); invalid UTF-8 is an error naming its line.
    public static func parse(bytes: [UInt8], referenceDuration: Double, origin: Date? = nil) throws(EarshotError) -> [Cue] {
        try PlaylistReader(lines: try lines(of: bytes), referenceDuration: referenceDuration, origin: origin).cues()
    }

    /// The cues of playlist `text` on a reference of `referenceDuration` seconds, in timeline
    /// order. `origin`, when given, is the date of the reference's start and overrides the
    /// playlist's `#EXT-X-PROGRAM-DATE-TIME`.
    public static func parse(text: String, referenceDuration: Double, origin: Date? = nil) throws(EarshotError) -> [Cue] {
        try parse(bytes: Array(text.utf8), referenceDuration: referenceDuration, origin: origin)
    }

    /// The playlist for `cues` on a reference of `referenceDuration` seconds, with `origin` as
    /// its `#EXT-X-PROGRAM-DATE-TIME`. Throws if the cues are not a valid schedule for that
    /// reference, or a cue holds something the playlist cannot carry (a quote or line break in
    /// a text, an extra attribute whose text does not have its kind's syntax).
    public static func render(_ cues: [Cue], referenceDuration: Double, origin: Date = defaultOrigin) throws(EarshotError) -> String {
        guard referenceDuration.isFinite, referenceDuration >= 0, referenceDuration < 1e12 else {
            throw .catalogInvalid("the reference duration \(referenceDuration) s is not a length a playlist can give")
        }
        let schedule = try CueSchedule(cues, referenceDuration: referenceDuration)
        guard let originTime = DecimalTime(date: origin), let originText = originTime.isoText() else {
            throw .catalogInvalid("the origin \(origin) is not a date a playlist can give (years 0000–9999)")
        }
        var out = "#EXTM3U\n#EXT-X-VERSION:3\n"
        out += "# Cues of one Earshot reference (\(DecimalText.plain(referenceDuration)) s): a cue's START-DATE minus the "
            + "PROGRAM-DATE-TIME is its time on the reference.\n"
        out += "#EXT-X-TARGETDURATION:\(max(1, Int(referenceDuration.rounded())))\n#EXT-X-PLAYLIST-TYPE:VOD\n"
        out += "#EXT-X-PROGRAM-DATE-TIME:\(originText)\n"
        for cue in schedule.cues {
            out += "#EXT-X-DATERANGE:" + (try tag(for: cue, origin: originTime)) + "\n"
        }
        out += "#EXTINF:\(DecimalText.plain(referenceDuration)),\n\(segmentURI)\n#EXT-X-ENDLIST\n"
        return out
    }

    /// The attribute list of `cue`'s tag, checked to read back as the same cue.
    private static func tag(for cue: Cue, origin: DecimalTime) throws(EarshotError) -> String {
        func fail(_ why: String) -> EarshotError { .catalogInvalid("cue \(AttributeList.printable(cue.id)): \(why)") }
        guard let start = DecimalTime(seconds: cue.start), let startText = (origin + start).isoText() else {
            throw fail("its START-DATE (the origin + \(cue.start) s) is not a date a playlist can give")
        }
        var list: [AttributeList.Attribute] = []
        for field in CueField.allCases {
            guard let value = field.value(of: cue) else { continue }
            list.append(AttributeList.Attribute(field.attributeName, value))
            if field == .cueClass || (field == .id && cue.cueClass.isEmpty) {
                list.append(AttributeList.Attribute("START-DATE", .quoted(startText)))
            }
        }
        for name in cue.attributes.keys.sorted() {
            guard let attribute = cue.attributes[name] else { continue }
            do { list.append(AttributeList.Attribute(name, try CueField.value(of: attribute, named: name))) } catch {
                throw fail(error.message)
            }
        }
        let text: String
        do { text = try AttributeList(list).render() } catch { throw fail(error.reason) }
        // Whatever the playlist cannot carry as it is (an empty asset URI, a list naming a value
        // twice) would come back different: refuse it here rather than export something else.
        let back: Cue
        do { back = try DaterangeReader.cue(from: list.map { ($0, 0) }, origin: origin) } catch {
            throw .catalogInvalid(error.message)  // it names the cue
        }
        guard back == cue else { throw fail("it cannot be written as an EXT-X-DATERANGE tag that reads back the same") }
        return text
    }

    /// The file's lines (LF or CRLF ends), each checked: UTF-8, no control characters.
    private static func lines(of bytes: [UInt8]) throws(EarshotError) -> [String] {
        guard !bytes.isEmpty else { throw .catalogInvalid("line 1: the file is empty; a playlist starts with #EXTM3U") }
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            throw .catalogInvalid("line 1: the file starts with a byte order mark, which RFC 8216 forbids in a playlist; save it without one")
        }
        guard bytes.starts(with: Array("#EXTM3U".utf8)), bytes.count == 7 || bytes[7] == 0x0A || bytes[7] == 0x0D else {
            throw .catalogInvalid("line 1: not an HLS playlist: the first line must be #EXTM3U")
        }
        var lines: [String] = []
        for (index, raw) in bytes.split(separator: 0x0A, omittingEmptySubsequences: false).enumerated() {
            let number = index + 1
            let content = raw.last == 0x0D ? raw.dropLast() : raw
            guard let line = String(validating: content, as: UTF8.self) else {
                throw .catalogInvalid("line \(number): not UTF-8 text")
            }
            if let bad = line.unicodeScalars.first(where: \.isControlCharacter) {
                throw .catalogInvalid("line \(number): \(AttributeList.describe(bad)) (a control character), which a playlist cannot hold")
            }
            lines.append(line)
        }
        return lines
    }
}

/// One pass over a playlist's lines: the origin, then the `EXT-X-DATERANGE` tags merged by ID.
private struct PlaylistReader {
    let lines: [String]
    let referenceDuration: Double
    let origin: Date?

    static let daterange = "#EXT-X-DATERANGE"
    static let programDateTime = "#EXT-X-PROGRAM-DATE-TIME"

    /// The attributes of one ID so far, each with the line that gave it.
    struct Pending {
        var id: String
        var firstLine: Int
        var lastLine: Int
        var attributes: [(AttributeList.Attribute, Int)]
    }

    func cues() throws(EarshotError) -> [Cue] {
        let originTime = try findOrigin()
        var pending: [Pending] = []
        var byID: [String: Int] = [:]
        for (index, line) in lines.enumerated() where Self.tagName(of: line) == Self.daterange {
            let number = index + 1
            guard line.hasPrefix(Self.daterange + ":") else {
                throw .catalogInvalid("line \(number): \(Self.daterange) needs \":\" and its attributes")
            }
            let list: AttributeList
            do { list = try AttributeList.parse(String(line.dropFirst(Self.daterange.count + 1))) } catch {
                let column = error.column.map { ", column \($0 + Self.daterange.count + 1)" } ?? ""
                throw .catalogInvalid("line \(number)\(column): \(error.reason)")
            }
            guard let idValue = list["ID"] else { throw .catalogInvalid("line \(number): EXT-X-DATERANGE has no ID") }
            guard idValue.kind == .quotedString else {
                throw .catalogInvalid("line \(number): ID: \(CueField.shown(idValue)) must be a quoted string, like ID=\"…\"")
            }
            let id = idValue.text
            guard let existing = byID[id] else {
                byID[id] = pending.count
                pending.append(Pending(id: id, firstLine: number, lastLine: number, attributes: list.attributes.map { ($0, number) }))
                continue
            }
            // A repeated ID may add attributes, never change one (RFC 8216 §4.3.2.7).
            for attribute in list.attributes {
                if let (earlier, line) = pending[existing].attributes.first(where: { $0.0.name == attribute.name }) {
                    guard earlier.value == attribute.value else {
                        throw .catalogInvalid(
                            "line \(number): cue \(AttributeList.printable(id)): \(attribute.name)=\(Self.written(attribute)) conflicts with "
                                + "\(attribute.name)=\(Self.written(earlier)) on line \(line); a tag repeating an ID may only add attributes")
                    }
                } else {
                    pending[existing].attributes.append((attribute, number))
                }
            }
            pending[existing].lastLine = number
        }
        var cues: [Cue] = []
        for entry in pending {
            let cue: Cue
            do { cue = try DaterangeReader.cue(from: entry.attributes, origin: originTime, firstLine: entry.firstLine) } catch {
                throw .catalogInvalid("line \(error.line): \(error.message)")
            }
            // Checked one by one first, so the error names the line.
            do { _ = try CueSchedule([cue], referenceDuration: referenceDuration) } catch {
                throw .catalogInvalid("line \(entry.lastLine): \(error.message)")
            }
            cues.append(cue)
        }
        return try CueSchedule(cues, referenceDuration: referenceDuration).cues
    }

    /// The given origin, else the first `EXT-X-PROGRAM-DATE-TIME` before the first segment;
    /// nil if neither (an error only once a tag needs it). Every such tag is checked.
    private func findOrigin() throws(EarshotError) -> DecimalTime? {
        var found: DecimalTime?
        var segmentSeen = false
        for (index, line) in lines.enumerated() {
            if Self.tagName(of: line) == Self.programDateTime {
                let value = line.hasPrefix(Self.programDateTime + ":") ? String(line.dropFirst(Self.programDateTime.count + 1)) : ""
                guard let time = DecimalTime(instant: value) else {
                    throw .catalogInvalid("line \(index + 1): EXT-X-PROGRAM-DATE-TIME: \(DaterangeReader.dateProblem(value))")
                }
                if !segmentSeen, found == nil { found = time }
            } else if !line.hasPrefix("#"), !line.allSatisfy(\.isWhitespace) {
                segmentSeen = true
            }
        }
        if let origin {
            guard let time = DecimalTime(date: origin) else {
                throw .catalogInvalid("the origin \(origin) is not a date a playlist can give (years 0000–9999)")
            }
            return time
        }
        return found
    }

    /// `#EXT-X-NAME` of a tag line (up to its ":"), or the whole line.
    static func tagName(of line: String) -> Substring {
        line.prefix { $0 != ":" }
    }

    private static func written(_ attribute: AttributeList.Attribute) -> String {
        let text = (try? attribute.value.rendered(as: attribute.name)) ?? attribute.value.text
        return AttributeList.printable(text)
    }
}

/// Turns the attributes of one ID into a cue.
enum DaterangeReader {
    struct Problem: Error {
        var line: Int
        var message: String
    }

    /// The cue `attributes` (each with its line) describe; `origin` places START-DATE (nil:
    /// the playlist has none, an error). `firstLine` is where errors about missing attributes point.
    static func cue(from attributes: [(AttributeList.Attribute, Int)], origin: DecimalTime?, firstLine: Int = 0) throws(Problem) -> Cue {
        var cue = Cue(id: "", start: 0)
        var startDate: (DecimalTime, Int)?
        var endDate: (DecimalTime, Int)?
        var idText = "(no id)"
        if let id = attributes.first(where: { $0.0.name == "ID" })?.0.value.text { idText = AttributeList.printable(id) }
        for (attribute, line) in attributes {
            func fail(_ why: String) -> Problem { Problem(line: line, message: "cue \(idText): \(attribute.name): \(why)") }
            switch attribute.name {
            case "START-DATE", "END-DATE":
                guard attribute.value.kind == .quotedString else {
                    throw fail("\(CueField.shown(attribute.value)) must be a quoted string, like \(attribute.name)=\"2024-05-01T20:15:00.000Z\"")
                }
                guard let time = DecimalTime(instant: attribute.value.text) else { throw fail(dateProblem(attribute.value.text)) }
                if attribute.name == "START-DATE" { startDate = (time, line) } else { endDate = (time, line) }
            default:
                if let field = CueField.byAttributeName[attribute.name] {
                    do { try field.read(attribute.value, into: &cue) } catch { throw fail(error.message) }
                } else {
                    cue.attributes[attribute.name] = CueField.kept(attribute.value)
                }
            }
        }
        guard let (start, startLine) = startDate else {
            throw Problem(line: firstLine, message: "cue \(idText): EXT-X-DATERANGE has no START-DATE")
        }
        guard let origin else {
            throw Problem(line: startLine, message: "cue \(idText): START-DATE cannot be placed on the reference: the playlist has no "
                + "#EXT-X-PROGRAM-DATE-TIME before its first segment; pass --origin (the date at which the reference starts)")
        }
        let offset = start - origin
        guard !offset.isNegative else {
            throw Problem(line: startLine, message: "cue \(idText): START-DATE is \((origin - start).text) s before the origin "
                + "\(origin.isoText() ?? origin.text); a cue cannot start before the reference")
        }
        guard let seconds = offset.seconds else { throw Problem(line: startLine, message: "cue \(idText): START-DATE is too far from the origin") }
        cue.start = seconds
        if let (end, endLine) = endDate {
            let length = end - start
            guard !length.isNegative, let lengthSeconds = length.seconds else {
                throw Problem(line: endLine, message: "cue \(idText): END-DATE is before START-DATE")
            }
            guard !cue.endOnNext else { throw Problem(line: endLine, message: "cue \(idText): END-ON-NEXT cannot be given with an END-DATE") }
            if let duration = cue.duration {
                guard abs(duration - lengthSeconds) <= 0.001 + 1e-9 else {
                    throw Problem(line: endLine, message: "cue \(idText): END-DATE − START-DATE is \(length.text) s but DURATION is "
                        + "\(DecimalText.plain(duration)) s; they must agree (within 1 ms)")
                }
            } else {
                cue.duration = lengthSeconds
            }
        }
        return cue
    }

    /// Why `text` is not a date-time a tag can give.
    static func dateProblem(_ text: String) -> String {
        let shown = "\"\(AttributeList.printable(text))\""
        if DecimalTime(instant: text + "Z") != nil {
            return "\(shown) has no time zone; add Z (UTC) or an offset like +02:00"
        }
        return "\(shown) is not an ISO 8601 date-time with a zone, like 2024-05-01T20:15:00.000Z"
    }
}
