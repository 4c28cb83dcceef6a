/// A look at a `RequestEnvelope`'s wire bytes before they are copied or decoded: its request id,
/// and whether its metadata can be within the limits.
///
/// The RPC loop serves everyone, so nothing it does for one message may cost much. Decoding an
/// envelope whose metadata map has 300 000 entries takes a second; this reads only the top-level
/// tags and lengths (protobuf's wire format: a varint tag `field << 3 | wire type`, then the
/// value) and stops at the first entry past a limit, so it costs microseconds whatever arrives.
/// The exact rules (`MetadataRules`) still run on what it lets through.
enum EnvelopePrecheck {
    enum Verdict: Equatable {
        /// Within what this can judge: decode it.
        case decode
        /// Over a limit: answer INVALID_ARGUMENT (`problem`) to `requestID` without decoding.
        /// `requestID` is 0 when it was not seen before the limit was: then nobody can be answered.
        case refuse(requestID: UInt64, problem: String)
        /// Not a protobuf message at all: drop it, as a failed decode would be.
        case malformed
    }

    /// Top-level fields beyond the metadata entries: the envelope has five others, and room is
    /// left for fields a newer client may add.
    static let spareFields = 32
    /// Wire bytes an entry may take beyond its key and value (two tags, two lengths).
    static let entryOverhead = 8

    private static let requestIDField: UInt64 = 1
    private static let metadataField: UInt64 = 4

    static func check(_ bytes: UnsafeRawBufferPointer, maximumEntries: Int, maximumBytes: Int) -> Verdict {
        let maximumFields = maximumEntries + spareFields
        var reader = WireReader(bytes: bytes, tagsLeft: maximumFields)
        var requestID: UInt64 = 0
        var entries = 0, entryBytes = 0
        var tooManyFields: Verdict {
            .refuse(requestID: requestID, problem: "the envelope has more than \(maximumFields) fields")
        }
        while !reader.atEnd {
            guard let tag = reader.tag() else { return reader.tagsLeft < 0 ? tooManyFields : .malformed }
            let field = tag >> 3, wireType = tag & 7
            guard field != 0 else { return .malformed }
            if field == requestIDField, wireType == WireReader.varintType {
                guard let value = reader.varint() else { return .malformed }
                requestID = value
                continue
            }
            if field == metadataField, wireType == WireReader.lengthDelimitedType {
                guard let length = reader.skipLengthDelimited() else { return .malformed }
                entries += 1
                entryBytes += length
                if entries > maximumEntries {
                    return .refuse(requestID: requestID, problem: "more than \(maximumEntries) metadata entries; at most \(maximumEntries) are allowed")
                }
                if entryBytes > maximumBytes + entryOverhead * maximumEntries {
                    return .refuse(requestID: requestID, problem: "more than \(maximumBytes) bytes of metadata; at most \(maximumBytes) are allowed")
                }
                continue
            }
            guard reader.skip(field: field, wireType: wireType, depth: 0) else {
                return reader.tagsLeft < 0 ? tooManyFields : .malformed
            }
        }
        return .decode
    }
}

/// Reads protobuf's wire format in place, without allocating, and at most `tagsLeft` tags
/// (groups' included), so that its work is bounded whatever the input.
private struct WireReader {
    static let varintType: UInt64 = 0
    static let fixed64Type: UInt64 = 1
    static let lengthDelimitedType: UInt64 = 2
    static let startGroupType: UInt64 = 3
    static let endGroupType: UInt64 = 4
    static let fixed32Type: UInt64 = 5
    /// Groups nested deeper are refused, as the decoder refuses messages nested deeper.
    static let maximumDepth = 32

    let bytes: UnsafeRawBufferPointer
    /// Below zero once the budget ran out.
    var tagsLeft: Int
    var index = 0

    var atEnd: Bool { index >= bytes.count }

    /// A varint of at most 10 bytes; nil when cut short or longer.
    mutating func varint() -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while index < bytes.count, shift < 70 {
            let byte = bytes[index]
            index += 1
            value |= UInt64(byte & 0x7f) << shift
            if byte < 0x80 { return value }
            shift += 7
        }
        return nil
    }

    /// A field's tag; nil when malformed or past the budget.
    mutating func tag() -> UInt64? {
        tagsLeft -= 1
        guard tagsLeft >= 0 else { return nil }
        return varint()
    }

    /// Skips a length-delimited value; returns its length.
    mutating func skipLengthDelimited() -> Int? {
        guard let length = varint(), length <= UInt64(bytes.count - index) else { return nil }
        index += Int(length)
        return Int(length)
    }

    /// Skips the value of a field whose tag was just read.
    mutating func skip(field: UInt64, wireType: UInt64, depth: Int) -> Bool {
        switch wireType {
        case Self.varintType:
            return varint() != nil
        case Self.fixed64Type:
            return advance(8)
        case Self.fixed32Type:
            return advance(4)
        case Self.lengthDelimitedType:
            return skipLengthDelimited() != nil
        case Self.startGroupType:
            guard depth < Self.maximumDepth else { return false }
            while true {
                guard let tag = tag() else { return false }
                let inner = tag >> 3, innerType = tag & 7
                if innerType == Self.endGroupType { return inner == field }
                guard inner != 0, skip(field: inner, wireType: innerType, depth: depth + 1) else { return false }
            }
        default:
            // An end-group with no group open, or wire types 6 and 7, which do not exist.
            return false
        }
    }

    private mutating func advance(_ count: Int) -> Bool {
        guard bytes.count - index >= count else { return false }
        index += count
        return true
    }
}
