import ArgumentParser
import Foundation

/// `earshot remote discover`
struct RemoteDiscoverCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "discover",
        abstract: "List the boxes that announce themselves on the LAN (DNS-SD through avahi-daemon).",
        discussion: """
            Each line: the box's name, its address, RPC and events ports, protocol version, and a \
            fingerprint of its server key. Any remote command then takes --server NAME; without \
            --server-key it uses the key the box announced. A key seen on the LAN is only as \
            trustworthy as the LAN: pin the key you checked with --server-key, or compare the \
            fingerprint with the one the box logs when it is announced.

            Needs avahi-daemon running on this machine (Debian: apt install avahi-daemon).
            """)

    @Option(help: ArgumentHelp("Seconds to listen for announcements.", valueName: "seconds"))
    var timeout: Double = 2
    @Flag(help: "Print one JSON object per box.") var json = false

    func validate() throws {
        guard timeout.isFinite, timeout > 0, timeout <= 60 else { throw ValidationError("--timeout must be more than 0 and at most 60 seconds") }
    }

    func run() throws {
        let (boxes, unreadable) = try BoxDiscovery.find(timeout: timeout)
        for problem in unreadable { FileHandle.standardError.write(Data("earshot: ignored an announcement: \(problem)\n".utf8)) }
        if json {
            for box in boxes {
                let a = box.announcement
                var object: [String: Any] = [
                    "name": a.name, "host": box.hostName, "addresses": box.addresses, "server": box.server,
                    "events": box.events, "rpcPort": Int(a.rpcPort), "eventsPort": Int(a.eventsPort),
                    "protocolVersion": a.protocolVersion, "security": a.serverPublicKey == nil ? "none" : "curve",
                ]
                if let key = a.serverPublicKey {
                    object["serverKey"] = key
                    object["serverKeyFingerprint"] = BoxDiscovery.fingerprint(key)
                }
                let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
                print(String(decoding: data, as: UTF8.self))
            }
            return
        }
        guard !boxes.isEmpty else {
            print("no box answered within \(timeout) s")
            return
        }
        for box in boxes {
            let a = box.announcement
            let key = a.serverPublicKey.map { "key \(BoxDiscovery.fingerprint($0))" } ?? "no CURVE"
            print("\(a.name)  \(box.server)  events \(a.eventsPort)  earshot.v\(a.protocolVersion)  \(key)  (\(box.hostName))")
        }
    }
}
