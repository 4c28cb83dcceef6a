import EarshotCore

/// The cue fields that are `EXT-X-DATERANGE` attributes, each with its attribute name, its
/// column in the cue CSV, how its value is read into a `Cue` and written back. Both cue formats
/// go through here, so they accept the same values and say the same about wrong ones.
/// (`start` is not here: the playlist gives it as `START-DATE`, the CSV in seconds.)
enum CueField: CaseIterable {
    case id, cueClass, duration, plannedDuration, endOnNext, assetURI, assetList, resumeOffset, playoutLimit
    case restrictions, flags, snap, contentMayVary, timelineOccupies, timelineStyle
    case skipControlOffset, skipControlDuration, skipControlLabelID

    var attributeName: String {
        switch self {
        case .id: "ID"
        case .cueClass: "CLASS"
        case .duration: "DURATION"
        case .plannedDuration: "PLANNED-DURATION"
        case .endOnNext: "END-ON-NEXT"
        case .assetURI: "X-ASSET-URI"
        case .assetList: "X-ASSET-LIST"
        case .resumeOffset: "X-RESUME-OFFSET"
        case .playoutLimit: "X-PLAYOUT-LIMIT"
        case .restrictions: "X-RESTRICT"
        case .flags: "CUE"
        case .snap: "X-SNAP"
        case .contentMayVary: "X-CONTENT-MAY-VARY"
        case .timelineOccupies: "X-TIMELINE-OCCUPIES"
        case .timelineStyle: "X-TIMELINE-STYLE"
        case .skipControlOffset: "X-SKIP-CONTROL-OFFSET"
        case .skipControlDuration: "X-SKIP-CONTROL-DURATION"
        case .skipControlLabelID: "X-SKIP-CONTROL-LABEL-ID"
        }
    }

    /// The CSV column: the attribute name in lower case without `X-`.
    var columnName: String {
        switch self {
        case .cueClass: "class"
        case .restrictions: "restrict"
        default:
            String((attributeName.hasPrefix("X-") ? attributeName.dropFirst(2) : Substring(attributeName)).lowercased())
        }
    }

    static let byAttributeName: [String: CueField] = Dictionary(uniqueKeysWithValues: allCases.map { ($0.attributeName, $0) })

    /// Attribute names a cue's `attributes` cannot use: the fields', and the dates that place it.
    static let reservedNames: Set<String> = Set(allCases.map(\.attributeName)).union(["START-DATE", "END-DATE"])

    /// A value that does not fit the field; the message follows "NAME: " or "column x: ".
    struct Problem: Error {
        var message: String
    }

    /// Reads `value` into `cue`.
    func read(_ value: AttributeValue, into cue: inout Cue) throws(Problem) {
        switch self {
        case .id: cue.id = try Self.text(value, attributeName, allowEmpty: true)
        case .cueClass: cue.cueClass = try Self.text(value, attributeName, allowEmpty: true)
        case .assetURI: cue.assetURI = try Self.text(value, attributeName)
        case .assetList: cue.assetList = try Self.text(value, attributeName)
        case .skipControlLabelID: cue.skipControlLabelID = try Self.text(value, attributeName)
        case .duration: cue.duration = try Self.seconds(value)
        case .plannedDuration: cue.plannedDuration = try Self.seconds(value)
        case .playoutLimit: cue.playoutLimit = try Self.seconds(value)
        case .skipControlOffset: cue.skipControlOffset = try Self.seconds(value)
        case .skipControlDuration: cue.skipControlDuration = try Self.seconds(value)
        case .resumeOffset: cue.resumeOffset = try Self.seconds(value, signed: true)
        case .endOnNext:
            guard value.kind == .enumeratedString, value.text == "YES" else {
                throw Problem(message: "\(Self.shown(value)) is not allowed: END-ON-NEXT is YES or left out")
            }
            cue.endOnNext = true
        case .restrictions: cue.restrictions = try Self.list(value, attributeName, of: Cue.Restriction.self)
        case .flags: cue.flags = try Self.list(value, attributeName, of: Cue.Flag.self)
        case .snap: cue.snap = try Self.list(value, attributeName, of: Cue.Snap.self)
        case .contentMayVary:
            switch try Self.text(value, attributeName, allowEmpty: true) {
            case "YES": cue.contentMayVary = true
            case "NO": cue.contentMayVary = false
            default: throw Problem(message: "\(Self.shown(value)) is not one of \"YES\", \"NO\"")
            }
        case .timelineOccupies: cue.timelineOccupies = try Self.choice(value, attributeName, of: Cue.TimelineOccupancy.self)
        case .timelineStyle: cue.timelineStyle = try Self.choice(value, attributeName, of: Cue.TimelineStyle.self)
        }
    }

    /// The field's value in `cue` as an attribute value; nil when unset (or at its default:
    /// no class, `END-ON-NEXT` off, an empty list).
    func value(of cue: Cue) -> AttributeValue? {
        func number(_ v: Double?) -> AttributeValue? {
            v.map { let text = DecimalText.plain($0); return AttributeValue(AttributeValue.kind(ofUnquoted: text), text) }
        }
        func list<T: RawRepresentable<String>>(_ items: [T]) -> AttributeValue? {
            items.isEmpty ? nil : .quoted(items.map(\.rawValue).joined(separator: ","))
        }
        switch self {
        case .id: return .quoted(cue.id)
        case .cueClass: return cue.cueClass.isEmpty ? nil : .quoted(cue.cueClass)
        case .assetURI: return cue.assetURI.map(AttributeValue.quoted)
        case .assetList: return cue.assetList.map(AttributeValue.quoted)
        case .skipControlLabelID: return cue.skipControlLabelID.map(AttributeValue.quoted)
        case .duration: return number(cue.duration)
        case .plannedDuration: return number(cue.plannedDuration)
        case .playoutLimit: return number(cue.playoutLimit)
        case .skipControlOffset: return number(cue.skipControlOffset)
        case .skipControlDuration: return number(cue.skipControlDuration)
        case .resumeOffset: return number(cue.resumeOffset)
        case .endOnNext: return cue.endOnNext ? .enumerated("YES") : nil
        case .restrictions: return list(cue.restrictions)
        case .flags: return list(cue.flags)
        case .snap: return list(cue.snap)
        case .contentMayVary: return cue.contentMayVary.map { .quoted($0 ? "YES" : "NO") }
        case .timelineOccupies: return cue.timelineOccupies.map { .quoted($0.rawValue) }
        case .timelineStyle: return cue.timelineStyle.map { .quoted($0.rawValue) }
        }
    }

    // MARK: Extra attributes

    /// An attribute Earshot does not model, kept with its kind (resolutions count as decimal).
    static func kept(_ value: AttributeValue) -> CueAttribute {
        switch value.kind {
        case .quotedString: CueAttribute(.quotedString, value.text)
        case .hexadecimalSequence: CueAttribute(.hexadecimal, value.text)
        case .enumeratedString: CueAttribute(.enumerated, value.text)
        case .decimalInteger, .decimalFloatingPoint, .signedDecimalFloatingPoint, .decimalResolution: CueAttribute(.decimal, value.text)
        }
    }

    /// A kept attribute as an attribute value; a problem if its text does not have its kind's
    /// syntax (it would read back as another kind, or not at all).
    static func value(of attribute: CueAttribute, named name: String) throws(Problem) -> AttributeValue {
        if let problem = AttributeList.nameProblem(name) { throw Problem(message: problem) }
        guard !reservedNames.contains(name) else {
            throw Problem(message: "\(name) is a cue field, not an extra attribute")
        }
        let value: AttributeValue
        switch attribute.kind {
        case .quotedString: value = .quoted(attribute.value)
        case .hexadecimal: value = AttributeValue(.hexadecimalSequence, attribute.value)
        case .enumerated: value = .enumerated(attribute.value)
        case .decimal:
            let kind = AttributeValue.kind(ofUnquoted: attribute.value)
            guard kind != .enumeratedString, kind != .hexadecimalSequence else {
                throw Problem(message: "\(name): \"\(AttributeList.printable(attribute.value))\" is not a decimal number")
            }
            value = AttributeValue(kind, attribute.value)
        }
        do { _ = try value.rendered(as: name) } catch { throw Problem(message: error.reason) }
        return value
    }

    /// A kept attribute's value as an attribute list writes it (`"text"`, `0x1F`, `1.5`, `ENUM`).
    static func written(_ attribute: CueAttribute, named name: String) throws(Problem) -> String {
        let value = try value(of: attribute, named: name)
        do { return try value.rendered(as: name) } catch { throw Problem(message: error.reason) }
    }

    // MARK: Value kinds

    private static func text(_ value: AttributeValue, _ name: String, allowEmpty: Bool = false) throws(Problem) -> String {
        guard value.kind == .quotedString else {
            throw Problem(message: "\(shown(value)) must be a quoted string, like \(name)=\"…\"")
        }
        guard allowEmpty || !value.text.isEmpty else { throw Problem(message: "the value is empty; leave it out instead") }
        // Values made from CSV cells were not parsed from a quoted string: hold them to its rules.
        if value.text.unicodeScalars.contains("\"") {
            throw Problem(message: "\(shown(value)) contains a quote (\"), which an HLS quoted string cannot hold")
        }
        if let bad = value.text.unicodeScalars.first(where: { AttributeValue.quotedProblem($0) != nil }),
            let problem = AttributeValue.quotedProblem(bad)
        {
            throw Problem(message: "the text \(problem)")
        }
        return value.text
    }

    /// Seconds: a decimal number (signed only if `signed`), finite.
    private static func seconds(_ value: AttributeValue, signed: Bool = false) throws(Problem) -> Double {
        guard value.isNumber, let number = Double(value.text) else {
            throw Problem(message: "\(shown(value)) is not a number of seconds (digits with an optional decimal point, like 12.5)")
        }
        guard number.isFinite else { throw Problem(message: "\(shown(value)) is too large") }
        if !signed, number < 0 { throw Problem(message: "\(shown(value)) is negative; it must be 0 or more seconds") }
        return number + 0  // -0 → 0
    }

    /// A quoted, comma-separated list of known values, each at most once (`"SKIP,JUMP"`).
    private static func list<T: RawRepresentable<String> & CaseIterable & Equatable>(_ value: AttributeValue, _ name: String,
                                                                        of: T.Type) throws(Problem) -> [T] {
        let text = try text(value, name, allowEmpty: true)
        guard !text.isEmpty else { return [] }
        var items: [T] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let word = part.trimmingCharacters(in: .whitespaces)
            guard let item = T(rawValue: word) else {
                throw Problem(message: "\"\(AttributeList.printable(word))\" is not one of \(names(of: T.self))")
            }
            guard !items.contains(item) else { throw Problem(message: "lists \(word) twice") }
            items.append(item)
        }
        return items
    }

    private static func choice<T: RawRepresentable<String> & CaseIterable>(_ value: AttributeValue, _ name: String,
                                                                          of: T.Type) throws(Problem) -> T {
        let text = try text(value, name, allowEmpty: true)
        guard let item = T(rawValue: text) else {
            throw Problem(message: "\(shown(value)) is not one of \(T.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", "))")
        }
        return item
    }

    private static func names<T: RawRepresentable<String> & CaseIterable>(of: T.Type) -> String {
        T.allCases.map(\.rawValue).joined(separator: ", ")
    }

    /// A value as written, shortened for a message.
    static func shown(_ value: AttributeValue) -> String {
        let text = AttributeList.printable(value.text)
        return value.kind == .quotedString ? "\"\(text)\"" : text
    }
}
