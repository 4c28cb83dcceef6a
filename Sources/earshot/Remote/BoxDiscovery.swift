import Avahi
import EarshotCrypto
import EarshotWire

/// Boxes announced on the LAN (`ServiceAnnouncement`), found through avahi-daemon.
enum BoxDiscovery {
    /// One box: its announcement and every address it was seen at (IPv4 first).
    struct Box {
        var announcement: ServiceAnnouncement
        var hostName: String
        var addresses: [String]
        /// The RPC endpoint to call: the first address, IPv6 in brackets.
        var server: String {
            let a = addresses.first ?? hostName
            return "tcp://" + (a.contains(":") ? "[\(a)]" : a) + ":\(announcement.rpcPort)"
        }
        var events: String {
            let a = addresses.first ?? hostName
            return "tcp://" + (a.contains(":") ? "[\(a)]" : a) + ":\(announcement.eventsPort)"
        }
    }

    /// What one browse found: the boxes, and the records that are not valid announcements.
    static func find(timeout: Double) throws(CLIFailure) -> (boxes: [Box], unreadable: [String]) {
        let found: [AvahiBrowser.Found]
        do { found = try AvahiBrowser.browse(type: ServiceAnnouncement.serviceType, timeout: timeout) } catch {
            throw CLIFailure("cannot look for boxes: \(error.message)", status: .remote)
        }
        var boxes: [Box] = []
        var unreadable: [String] = []
        // IPv4 first, and link-local IPv6 last: an IPv6 link-local address needs an interface.
        let ordered = found.sorted { rank($0) < rank($1) }
        for f in ordered {
            let announcement: ServiceAnnouncement
            do {
                announcement = try ServiceAnnouncement(instanceName: f.service.name, port: f.service.port, txt: f.service.txt)
            } catch {
                if !unreadable.contains(where: { $0.hasPrefix("\"\(f.service.name)\"") }) {
                    unreadable.append("\"\(f.service.name)\" at \(f.address): \(error.message)")
                }
                continue
            }
            // The instance name is unique on the LAN: one box, seen on several addresses.
            if let i = boxes.firstIndex(where: { $0.announcement.name == announcement.name }) {
                if !boxes[i].addresses.contains(f.address) { boxes[i].addresses.append(f.address) }
            } else {
                boxes.append(Box(announcement: announcement, hostName: f.hostName, addresses: [f.address]))
            }
        }
        boxes.sort { $0.announcement.name.lowercased() < $1.announcement.name.lowercased() }
        return (boxes, unreadable)
    }

    private static func rank(_ f: AvahiBrowser.Found) -> Int {
        !f.isIPv6 ? 0 : f.address.lowercased().hasPrefix("fe80") ? 2 : 1
    }

    /// The box called `name` (its announced name, case aside, or its host name `NAME.local`).
    static func box(named name: String, timeout: Double) throws(CLIFailure) -> Box {
        try box(named: name, in: try find(timeout: timeout).boxes, timeout: timeout)
    }

    /// The box called `name` among `boxes`, found by a browse of `timeout` seconds.
    static func box(named name: String, in boxes: [Box], timeout: Double) throws(CLIFailure) -> Box {
        let wanted = name.lowercased()
        let matches = boxes.filter {
            $0.announcement.name.lowercased() == wanted || $0.hostName.lowercased() == wanted
                || $0.hostName.lowercased() == wanted + ".local"
        }
        guard let first = matches.first else {
            let seen = boxes.map { "\"\($0.announcement.name)\"" }
            throw CLIFailure("no box called \"\(name)\" answered on the LAN within \(timeout) s"
                             + (seen.isEmpty ? " (none did; `earshot remote discover` lists what answers)" : "; found \(seen.joined(separator: ", "))"),
                             status: .remote)
        }
        return first
    }

    /// The key's fingerprint (`CurveKeyFingerprint`), "?" for text that is not a key.
    static func fingerprint(_ key: String) -> String { CurveKeyFingerprint.of(key) ?? "?" }
}
