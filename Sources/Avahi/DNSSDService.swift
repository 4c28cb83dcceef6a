/// One DNS-SD service instance as published or found: its instance name ("Living room"), type
/// ("_earshot._tcp"), port and TXT strings ("key=value", raw bytes).
public struct DNSSDService: Sendable, Equatable {
    public var name: String
    public var type: String
    public var port: UInt16
    public var txt: [[UInt8]]

    public init(name: String, type: String, port: UInt16, txt: [[UInt8]]) {
        self.name = name
        self.type = type
        self.port = port
        self.txt = txt
    }

    /// DNS-SD's limits: an instance name of 1–63 bytes of UTF-8, each TXT string 1–255 bytes.
    /// Names cross into C as NUL-terminated strings, so they may hold no NUL.
    public static let maximumNameBytes = 63
    public static let maximumTXTStringBytes = 255

    func validate() throws(AvahiError) {
        let bytes = name.utf8.count
        guard bytes >= 1, bytes <= Self.maximumNameBytes else {
            throw AvahiError("a service name is 1 to \(Self.maximumNameBytes) bytes; \"\(name)\" has \(bytes)")
        }
        guard !name.utf8.contains(0), !type.utf8.contains(0) else { throw AvahiError("a service name or type holds a NUL byte") }
        guard type.hasPrefix("_"), type.hasSuffix("._tcp") || type.hasSuffix("._udp") else {
            throw AvahiError("\"\(type)\" is not a DNS-SD service type (_name._tcp)")
        }
        for entry in txt where entry.isEmpty || entry.count > Self.maximumTXTStringBytes {
            throw AvahiError("a TXT string is 1 to \(Self.maximumTXTStringBytes) bytes; one has \(entry.count)")
        }
    }
}

/// What Avahi refused, in words.
public struct AvahiError: Error, Equatable, CustomStringConvertible, Sendable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
