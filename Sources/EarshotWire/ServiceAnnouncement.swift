import EarshotCore

/// What a box announces on the LAN with DNS-SD: service type `_earshot._tcp` on the RPC port,
/// the instance name the box's name, and TXT strings for the rest (docs/PROTOCOL.md,
/// "Finding a box: DNS-SD"). Unknown TXT keys are ignored, so later versions may add some.
public struct ServiceAnnouncement: Sendable, Equatable {
    public static let serviceType = "_earshot._tcp"
    /// The TXT layout's version (`txtvers`).
    public static let txtVersion = 1
    /// `earshot.v1`.
    public static let currentProtocolVersion = 1

    /// The box's name: as written, `daemon.name` (the instance name asked for, and the `name`
    /// TXT string); as read, the instance name, which is unique on the LAN (Avahi makes it
    /// "NAME #2" when another device has NAME).
    public var name: String
    public var rpcPort: UInt16
    public var eventsPort: UInt16
    public var protocolVersion: Int
    /// The server's CURVE public key (Z85, 40 characters); nil when the box runs without CURVE.
    public var serverPublicKey: String?

    public init(name: String, rpcPort: UInt16, eventsPort: UInt16, protocolVersion: Int = currentProtocolVersion,
                serverPublicKey: String?) {
        self.name = name
        self.rpcPort = rpcPort
        self.eventsPort = eventsPort
        self.protocolVersion = protocolVersion
        self.serverPublicKey = serverPublicKey
    }

    /// The TXT strings, in this order: txtvers, proto, events, security, key (with CURVE), name.
    public var txt: [[UInt8]] {
        var strings = ["txtvers=\(Self.txtVersion)", "proto=\(protocolVersion)", "events=\(eventsPort)"]
        if let serverPublicKey {
            strings += ["security=curve", "key=\(serverPublicKey)"]
        } else {
            strings.append("security=none")
        }
        strings.append("name=\(name)")
        return strings.map { Array($0.utf8) }
    }

    /// Reads an announcement found on the network under the DNS-SD `instanceName`, which names
    /// it (the `name` TXT string is the name its box asked for, and may be taken).
    public init(instanceName: String, port: UInt16, txt: [[UInt8]]) throws(Problem) {
        var fields: [String: String] = [:]
        for entry in txt {
            guard let text = String(validating: entry, as: UTF8.self) else { throw Problem("a TXT string is not UTF-8") }
            let parts = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            // RFC 6763 §6.4: only the first occurrence of a key counts.
            if parts.count == 2, fields[String(parts[0]).lowercased()] == nil { fields[String(parts[0]).lowercased()] = String(parts[1]) }
        }
        guard let proto = fields["proto"].flatMap({ Int($0) }) else { throw Problem("no protocol version (proto=)") }
        guard let events = fields["events"].flatMap({ UInt16($0) }), events > 0 else { throw Problem("no events port (events=)") }
        guard port > 0 else { throw Problem("no RPC port") }
        let key: String?
        switch fields["security"] ?? "curve" {
        case "none":
            key = nil
        case "curve":
            guard let k = fields["key"], Self.isZ85Key(k) else {
                throw Problem("no CURVE server key (key=, 40 characters of Z85)")
            }
            key = k
        case let other:
            throw Problem("unknown security \"\(other)\"")
        }
        // A name goes to terminals and logs: one with control characters is not a box's.
        guard !instanceName.unicodeScalars.contains(where: \.isControlCharacter) else {
            throw Problem("the name holds control characters")
        }
        self.init(name: instanceName, rpcPort: port, eventsPort: events,
                  protocolVersion: proto, serverPublicKey: key)
    }

    /// Z85's alphabet (ZeroMQ RFC 32).
    private static let z85 = Array("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#".utf8)

    /// Whether `text` is a CURVE key: 40 characters of Z85, each group of 5 a 32-bit value. Only
    /// such text is ever used as a key: key options also take file paths, and a record from the
    /// LAN must never name a file.
    static func isZ85Key(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 40 else { return false }
        for group in stride(from: 0, to: 40, by: 5) {
            var value: UInt64 = 0
            for b in bytes[group..<group + 5] {
                guard let digit = z85.firstIndex(of: b) else { return false }
                value = value * 85 + UInt64(digit)
            }
            guard value <= UInt64(UInt32.max) else { return false }
        }
        return true
    }

    /// Why an announcement could not be read.
    public struct Problem: Error, Equatable, CustomStringConvertible, Sendable {
        public let message: String
        public init(_ message: String) { self.message = message }
        public var description: String { message }
    }
}
