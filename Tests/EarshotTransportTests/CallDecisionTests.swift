import Foundation
import Testing

@testable import EarshotTransport

/// Every way the server refuses a CALL, decided without a socket, in the order the server checks
/// them, and the statistic each refusal adds to.
@Suite("call decision")
struct CallDecisionTests {
    let peer = PeerID(bytes: [7])
    let configuration: RpcServer.Configuration = {
        var c = RpcServer.Configuration(endpoints: ["tcp://127.0.0.1:0"])
        c.defaultTimeout = .seconds(30)
        c.maximumTimeout = .seconds(60)
        c.maximumMetadataEntries = 2
        return c
    }()
    let operatorHandler = MethodHandler(minimumRole: .operator) { _, _, _ in .ok(Data()) }
    let viewer = ClientAllowList.Entry(publicKey: "k", name: "tv", role: .viewer)
    let admin = ClientAllowList.Entry(publicKey: "a", name: "desk", role: .admin)

    func facts(method: String = "earshot.v1.Catalogs/Push", metadata: [String: String] = [:], timeout: UInt32 = 0,
               duplicate: Bool = false, accepting: Bool = true, known: Bool = true,
               caller: CallDecision.Identity) -> CallDecision.Facts {
        .init(requestID: 9, method: method, metadata: metadata, timeoutMilliseconds: timeout, duplicate: duplicate,
              accepting: accepting, handler: known ? operatorHandler : nil, caller: caller)
    }

    func refusal(_ f: CallDecision.Facts, admission: CallAdmission? = nil) -> (RpcError, CallDecision.Count)? {
        let admission = admission ?? CallAdmission(limits: configuration.admissionLimits)
        guard case .refuse(let error, let count) = CallDecision.decide(f, on: peer, admission: admission,
                                                                         configuration: configuration) else { return nil }
        return (error, count)
    }

    @Test func eachRefusalHasItsCodeAndTheFirstOneWins() throws {
        // A duplicate id is told so even when every other check would also fail.
        let duplicate = try #require(refusal(facts(duplicate: true, accepting: false, known: false, caller: .key(nil))))
        #expect(duplicate.0.code == .alreadyExists && duplicate.1 == .none)
        let stopping = try #require(refusal(facts(accepting: false, known: false, caller: .key(nil))))
        #expect(stopping.0.code == .unavailable && stopping.0.message == "the server is shutting down")
        let unknown = try #require(refusal(facts(method: "x/\u{1}y", known: false, caller: .key(nil))))
        #expect(unknown.0.code == .unimplemented && unknown.0.message.contains("unknown method"))
        #expect(!unknown.0.message.contains("\u{1}"))
        let removed = try #require(refusal(facts(caller: .key(nil))))
        #expect(removed.0.code == .unauthenticated && removed.1 == .none)
        let denied = try #require(refusal(facts(caller: .key(viewer))))
        #expect(denied.0.code == .permissionDenied && denied.1 == .denied)
        #expect(denied.0.message == "earshot.v1.Catalogs/Push needs the operator role; this client is viewer")
        let metadata = try #require(refusal(facts(metadata: ["a": "1", "b": "2", "c": "3"], caller: .key(admin))))
        #expect(metadata.0.code == .invalidArgument && metadata.1 == .none)
    }

    @Test func aFullServerRejectsAndNamesTheClient() throws {
        var admission = CallAdmission(limits: .init(perConnection: 1, perClient: 4, total: 4, guaranteedPerClient: 1,
                                                    operatorReserve: 1))
        admission.add(.init(connection: peer, client: "key desk", role: .admin, clientLabel: "client \"desk\""))
        let full = try #require(refusal(facts(caller: .key(admin)), admission: admission))
        #expect(full.0.code == .resourceExhausted)
        guard case .rejected(let reason) = full.1 else { Issue.record("not counted as a rejection"); return }
        #expect(reason.hasPrefix("client \"desk\": 1 calls from this connection"))
    }

    @Test func anAdmittedCallCarriesItsCallerAndTimeout() throws {
        let decide = { (f: CallDecision.Facts) -> CallDecision.Start? in
            guard case .start(let s) = CallDecision.decide(f, on: self.peer, admission: CallAdmission(limits: self.configuration.admissionLimits),
                                                            configuration: self.configuration) else { return nil }
            return s
        }
        let keyed = try #require(decide(facts(timeout: 5000, caller: .key(admin))))
        #expect(keyed.caller.client == "key desk" && keyed.caller.role == .admin && keyed.userID == "desk:admin")
        #expect(keyed.timeout == .seconds(5))
        // Without CURVE a client is its address, an admin, and its timeout is capped.
        let plain = try #require(decide(facts(timeout: 90_000, caller: .address("10.0.0.5", userID: nil))))
        #expect(plain.caller.client == "address 10.0.0.5" && plain.caller.role == .admin && plain.userID == nil)
        #expect(plain.timeout == .seconds(60))
        let defaulted = try #require(decide(facts(caller: .address(nil, userID: nil))))
        #expect(defaulted.caller.clientLabel == "address ?" && defaulted.timeout == .seconds(30))
    }
}
