import EarshotWire
import Testing

/// The DNS-SD record a box announces, written and read back, and what a hostile or foreign
/// record on the LAN gives.
struct ServiceAnnouncementTests {
    static let key = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"

    static func strings(_ texts: [String]) -> [[UInt8]] { texts.map { Array($0.utf8) } }

    @Test func anAnnouncementReadsBackAsItWasWritten() throws {
        let written = ServiceAnnouncement(name: "Living room", rpcPort: 7400, eventsPort: 7401, serverPublicKey: Self.key)
        #expect(written.txt == Self.strings(["txtvers=1", "proto=1", "events=7401", "security=curve", "key=\(Self.key)",
                                             "name=Living room"]))
        #expect(try ServiceAnnouncement(instanceName: "Living room", port: 7400, txt: written.txt) == written)
        let renamed = try ServiceAnnouncement(instanceName: "Living room #2", port: 7400, txt: written.txt)
        #expect(renamed.name == "Living room #2", "the instance name, unique on the LAN, names the box")
        let open = ServiceAnnouncement(name: "Bar", rpcPort: 9000, eventsPort: 9001, serverPublicKey: nil)
        #expect(open.txt.contains(Array("security=none".utf8)))
        #expect(!open.txt.contains { $0.starts(with: Array("key=".utf8)) })
        #expect(try ServiceAnnouncement(instanceName: "Bar", port: 9000, txt: open.txt) == open)
    }

    @Test func unknownKeysAreIgnoredAndTheFirstOfARepeatedKeyCounts() throws {
        let read = try ServiceAnnouncement(instanceName: "Kitchen", port: 7400, txt: Self.strings([
            "txtvers=2", "PROTO=1", "proto=9", "events=7401", "colour=blue", "flag", "security=curve", "key=\(Self.key)",
        ]))
        #expect(read.protocolVersion == 1)
        #expect(read.name == "Kitchen")
        #expect(read.serverPublicKey == Self.key)
    }

    @Test(arguments: [
        (["events=7401", "security=none"], "no protocol version"),
        (["proto=x", "events=7401", "security=none"], "no protocol version"),
        (["proto=1", "security=none"], "no events port"),
        (["proto=1", "events=70000", "security=none"], "no events port"),
        (["proto=1", "events=0", "security=none"], "no events port"),
        (["proto=1", "events=7401"], "no CURVE server key"),
        (["proto=1", "events=7401", "security=curve", "key=short"], "no CURVE server key"),
        (["proto=1", "events=7401", "security=curve", "key=rq:rM>}U?@Lns47E1%kR.o@n%Fcmms /@{H8]yf7"], "no CURVE server key"),
        (["proto=1", "events=7401", "security=tls"], "unknown security \"tls\""),
        // Key options also take file paths: a record must never name a file.
        (["proto=1", "events=7401", "security=curve", "key=/dev/./././././././././././././././zero"], "no CURVE server key"),
        (["proto=1", "events=7401", "security=curve", "key=%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%"], "no CURVE server key"),
    ])
    func aRecordThatCannotBeUsedSaysWhy(texts: [String], expected: String) {
        do {
            let read = try ServiceAnnouncement(instanceName: "x", port: 7400, txt: Self.strings(texts))
            Issue.record("accepted: \(read)")
        } catch {
            #expect(error.message.hasPrefix(expected), "\(error.message)")
        }
    }

    @Test func aNameWithControlCharactersIsNotABoxs() {
        let good = ServiceAnnouncement(name: "A", rpcPort: 7400, eventsPort: 7401, serverPublicKey: nil).txt
        #expect(throws: ServiceAnnouncement.Problem("the name holds control characters")) {
            try ServiceAnnouncement(instanceName: "TV\u{1B}[2J", port: 7400, txt: good)
        }
    }

    @Test func aRecordWithoutAPortOrWithBytesThatAreNotTextIsRefused() {
        let good = ServiceAnnouncement(name: "A", rpcPort: 7400, eventsPort: 7401, serverPublicKey: nil).txt
        #expect(throws: ServiceAnnouncement.Problem("no RPC port")) {
            try ServiceAnnouncement(instanceName: "A", port: 0, txt: good)
        }
        #expect(throws: ServiceAnnouncement.Problem("a TXT string is not UTF-8")) {
            try ServiceAnnouncement(instanceName: "A", port: 7400, txt: good + [[0x6E, 0x3D, 0xFF, 0xFE]])
        }
    }
}
