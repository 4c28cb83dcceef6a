import FoundationEssentials

/// A JSON value: the type of custom media-item properties.
public enum JSONValue: Sendable, Equatable, Hashable, Codable, CustomStringConvertible {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        else if let b = try? c.decode(Bool.self) { self = .bool(b) }
        else if let n = try? c.decode(Double.self) { self = .number(n) }
        else if let s = try? c.decode(String.self) { self = .string(s) }
        else if let a = try? c.decode([JSONValue].self) { self = .array(a) }
        else { self = .object(try c.decode([String: JSONValue].self)) }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case .bool(let b): try c.encode(b)
        case .number(let n): try c.encode(n)
        case .string(let s): try c.encode(s)
        case .array(let a): try c.encode(a)
        case .object(let o): try c.encode(o)
        }
    }

    public var description: String {
        switch self {
        case .null: "null"
        case .bool(let b): String(b)
        case .number(let n): n == n.rounded() && abs(n) < 1e15 ? String(Int64(n)) : String(n)
        case .string(let s): s
        case .array(let a): "[" + a.map(\.description).joined(separator: ", ") + "]"
        case .object(let o): "{" + o.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "}"
        }
    }
}

extension JSONValue {
    /// Compact JSON with sorted keys and unescaped slashes: the one text form of custom
    /// properties (the CSV cells and the wire). Made by one shared encoder, not one per value.
    public var jsonText: String {
        // Cannot fail: a JSONValue holds only JSON types (non-finite numbers never come from JSON).
        guard let data = try? JSONCoding.encoder.encode(self) else { return "null" }
        return String(decoding: data, as: UTF8.self)
    }

    /// Pretty-printed JSON with sorted keys (for people reading a terminal).
    public var prettyJSONText: String {
        guard let data = try? JSONCoding.prettyEncoder.encode(self) else { return "null" }
        return String(decoding: data, as: UTF8.self)
    }

    /// The JSON form of any Codable value (dates in `ISODate` form); nil if it cannot be encoded.
    public init?(encoding value: some Encodable) {
        guard let data = try? JSONCoding.encoder.encode(value),
              let decoded = try? JSONCoding.decoder.decode(JSONValue.self, from: data) else { return nil }
        self = decoded
    }

    /// Parses JSON text; nil if it is not one JSON value.
    public init?(jsonText: String) {
        guard let value = try? JSONCoding.decoder.decode(JSONValue.self, from: Data(jsonText.utf8)) else { return nil }
        self = value
    }
}

/// The JSON coders of the core, made once. Their settings never change after creation, so they
/// are shared between threads.
enum JSONCoding {
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var c = encoder.singleValueContainer()
            try c.encode(ISODate.render(date))
        }
        return encoder
    }()

    static let prettyEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let c = try decoder.singleValueContainer()
            let text = try c.decode(String.self)
            guard let date = ISODate.parse(text) else {
                throw DecodingError.dataCorruptedError(in: c, debugDescription: "\"\(text)\" is not an ISO 8601 date or date-time")
            }
            return date
        }
        return decoder
    }()
}
