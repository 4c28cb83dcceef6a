import Avahi
@testable import EarshotService
import Testing

/// What the daemon announces on the LAN, and when it does not (the announcement itself, through
/// a real avahi-daemon between two network namespaces, is `scripts/discovery-check.sh`).
struct DaemonAnnouncementTests {
    @Test(arguments: [
        ("tcp://0.0.0.0:7400", UInt16?.some(7400)),
        ("tcp://192.168.1.20:9000", 9000),
        ("tcp://[::]:7400", 7400),
        ("tcp://127.0.0.1:7400", nil),
        ("tcp://127.0.1.1:7400", nil),
        ("tcp://localhost:7400", nil),
        ("tcp://[::1]:7400", nil),
        ("ipc:///run/earshot/rpc", nil),
        ("tcp://0.0.0.0:0", nil),
        ("tcp://0.0.0.0:x", nil),
    ])
    func onlyAnEndpointOtherMachinesReachIsAnnounced(endpoint: String, port: UInt16?) {
        #expect(DaemonAnnouncement.lanPort(endpoint) == port)
    }

    @Test func theBoxIsCalledByItsConfiguredNameOrElseItsHostName() {
        var c = DaemonConfiguration()
        c.name = "Living room"
        #expect(DaemonAnnouncement.boxName(c) == "Living room")
        c.name = ""
        let host = DaemonAnnouncement.boxName(c)
        #expect(!host.isEmpty && host.utf8.count <= DNSSDService.maximumNameBytes)
    }

    @Test func aNameTooLongForDNSSDIsRefusedByTheConfiguration() throws {
        #expect(throws: (any Error).self) {
            try DaemonConfiguration.load(text: "[daemon]\nname = \"\(String(repeating: "é", count: 32))\"\n", origin: "f")
        }
        let c = try DaemonConfiguration.load(text: "[daemon]\nname = \"Café by the TV\"\nannounce = false\n", origin: "f")
        #expect(c.name == "Café by the TV" && !c.announce)
    }

    /// A record DNS-SD cannot carry is refused before anything reaches Avahi.
    @Test(arguments: [
        DNSSDService(name: String(repeating: "x", count: 64), type: "_earshot._tcp", port: 7400, txt: []),
        DNSSDService(name: "", type: "_earshot._tcp", port: 7400, txt: []),
        DNSSDService(name: "a\u{0}b", type: "_earshot._tcp", port: 7400, txt: []),
        DNSSDService(name: "box", type: "earshot", port: 7400, txt: []),
        DNSSDService(name: "box", type: "_earshot._tcp", port: 7400, txt: [[]]),
        DNSSDService(name: "box", type: "_earshot._tcp", port: 7400, txt: [[UInt8](repeating: 0x61, count: 256)]),
    ])
    func aServiceDNSSDCannotCarryIsRefused(service: DNSSDService) {
        #expect(throws: AvahiError.self) { try AvahiPublisher(service: service) { _ in } }
    }
}
