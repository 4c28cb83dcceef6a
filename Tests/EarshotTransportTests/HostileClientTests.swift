import EarshotTestSupport
import EarshotWire
import Foundation
import SwiftProtobuf
import Testing

@testable import EarshotTransport

/// What a hostile or careless peer on the LAN can do to a server, and what it must not achieve:
/// calls left behind by a client that vanished, one key taking every place, envelopes built to
/// be expensive to decode, connection floods. After each, well-behaved clients are served.
@Suite("hostile clients")
struct HostileClientTests {
    /// A CURVE server with a `hold` method open to viewers and some keys per role.
    final class Fixture: Sendable {
        static let hold = RpcMethod<Earshot_V1_HealthCheckRequest, Earshot_V1_HealthCheckRequest>("/earshot.test.Hostile/Hold")

        let loop: TransportLoop
        let server: RpcServer
        let endpoint: String
        let serverKeys: CurveKeyPair
        let allowList: ClientAllowList
        /// name → key pair; names "viewer-N", "operator-N".
        let keys: [String: CurveKeyPair]
        let endings = Recorder<RpcError>()

        init(viewers: Int = 3, operators: Int = 1, _ configure: (inout RpcServer.Configuration) -> Void) throws {
            serverKeys = try CurveKeyPair.generate()
            var keys: [String: CurveKeyPair] = [:]
            var entries: [ClientAllowList.Entry] = []
            for (role, count) in [(ClientRole.viewer, viewers), (.operator, operators)] {
                for i in 1...count {
                    let pair = try CurveKeyPair.generate()
                    keys["\(role.rawValue)-\(i)"] = pair
                    entries.append(.init(publicKey: pair.publicKey, name: "\(role.rawValue)-\(i)", role: role))
                }
            }
            self.keys = keys
            allowList = ClientAllowList(entries)
            var configuration = RpcServer.Configuration(endpoints: ["tcp://127.0.0.1:0"])
            configuration.security = ServerSecurity(keyPair: serverKeys, allowList: allowList)
            configure(&configuration)
            loop = try TransportLoop()
            server = try RpcServer(loop: loop, configuration: configuration)
            endpoint = server.boundEndpoints[0]
            let endings = self.endings
            server.register(Self.hold, role: .viewer) { request, call throws(RpcError) in
                while !call.isCancelled { try? await Task.sleep(for: .milliseconds(2)) }
                let reason = call.cancellationReason() ?? RpcError(.unknown, "?")
                endings.record(reason)
                throw reason
            }
            loop.start()
        }

        deinit { loop.stop() }

        func security(_ name: String) -> ClientSecurity {
            ClientSecurity(serverPublicKey: serverKeys.publicKey, keyPair: keys[name]!)
        }

        func client(_ name: String) throws -> RpcClient {
            try makeClient(endpoint) { $0.security = security(name) }
        }

        /// Starts a held call on `client`; the task ends with the call's error.
        func holding(_ client: RpcClient) -> Task<Earshot_V1_HealthCheckRequest, any Error> {
            Task { try await client.call(Self.hold, Echo.request("held")) }
        }

        /// A call that must be refused now: returns its error.
        func refusal(_ client: RpcClient) async -> RpcError? {
            await rpcError { () async throws(RpcError) in
                try await client.call(Self.hold, Echo.request("refused?"), timeout: .seconds(30))
            }
        }
    }

    // MARK: Calls of clients that are gone

    @Test func callsOfAClosedConnectionEndAtOnce() async throws {
        let echo = try EchoServer()
        defer { echo.stop() }
        // A long deadline, and the socket closed without a CANCEL: nothing but the closed
        // connection tells the server the call is over.
        let raw = try RawDealer(echo.endpoint)
        var envelope = RawDealer.envelope(1, Echo.hold.path)
        envelope.timeoutMs = UInt32.max
        try raw.send(envelope)
        try await eventually("echo.server.statistics.inFlight == 1") { echo.server.statistics.inFlight == 1 }
        raw.socket.close()
        try await eventually("echo.endings.first != nil", within: .seconds(10)) { echo.endings.first != nil }
        #expect(echo.endings.first == RpcError(.cancelled, "the client disconnected"))
        try await eventually("echo.server.statistics.inFlight == 0", within: .seconds(10)) { echo.server.statistics.inFlight == 0 }
        #expect(echo.server.statistics.disconnects == 1)
        try await echo.expectHealthy()
    }

    @Test func callsOfARevokedKeyEndAtOnce() async throws {
        let fixture = try Fixture { _ in }
        let viewer = try fixture.client("viewer-1"), other = try fixture.client("viewer-2")
        defer { [viewer, other].forEach { $0.close() } }
        let revoked = (0..<3).map { _ in fixture.holding(viewer) }
        let kept = fixture.holding(other)
        try await eventually("fixture.server.statistics.inFlight == 4") { fixture.server.statistics.inFlight == 4 }

        fixture.allowList.replace(with: fixture.allowList.entries.filter { $0.name != "viewer-1" })
        for task in revoked {
            let error = await task.result.failure
            #expect(error == RpcError(.unauthenticated, "this client's key was removed from the server's allow-list"))
        }
        try await eventually("fixture.server.statistics.inFlight == 1", within: .seconds(10)) { fixture.server.statistics.inFlight == 1 }
        #expect(fixture.server.statistics.revokedCalls == 3)
        // The others' calls go on.
        try await Task.sleep(for: .milliseconds(50))
        #expect(fixture.server.statistics.inFlight == 1)
        kept.cancel()
        _ = await kept.result
    }

    // MARK: Fair shares

    @Test func aClientsLimitSpansItsConnections() async throws {
        let fixture = try Fixture { $0.maximumInFlightPerClient = 3 }
        let first = try fixture.client("viewer-1"), second = try fixture.client("viewer-1"), other = try fixture.client("viewer-2")
        defer { [first, second, other].forEach { $0.close() } }
        let held = [fixture.holding(first), fixture.holding(first), fixture.holding(second)]
        try await eventually("fixture.server.statistics.inFlight == 3") { fixture.server.statistics.inFlight == 3 }
        let refused = await fixture.refusal(second)
        #expect(refused == RpcError(.resourceExhausted, "3 calls of client \"viewer-1\" are already in flight (at most 3 per client)"))
        // Another key is not affected.
        let otherCall = fixture.holding(other)
        try await eventually("fixture.server.statistics.inFlight == 4") { fixture.server.statistics.inFlight == 4 }
        for task in held + [otherCall] { task.cancel() }
        for task in held + [otherCall] { _ = await task.result }
    }

    @Test func viewersCannotTakeTheOperatorsShareAndNobodyTakesAClientsFirstCalls() async throws {
        // 6 places, 2 of them kept from viewers; every client may always have 1 call.
        let fixture = try Fixture {
            $0.maximumInFlight = 6
            $0.operatorReserve = 2
            $0.guaranteedPerClient = 1
        }
        let v1 = try fixture.client("viewer-1"), v2 = try fixture.client("viewer-2"), v3 = try fixture.client("viewer-3")
        let op = try fixture.client("operator-1")
        defer { [v1, v2, v3, op].forEach { $0.close() } }
        var held = (0..<3).map { _ in fixture.holding(v1) } + [fixture.holding(v2)]
        try await eventually("fixture.server.statistics.inFlight == 4") { fixture.server.statistics.inFlight == 4 }
        // Viewers hold 4 = 6 − 2: no more for them beyond a first call.
        let refused = await fixture.refusal(v2)
        #expect(refused == RpcError(.resourceExhausted, "the server is busy: viewers have 4 calls in flight (at most 4; the rest is kept for operators and admins)"))
        // A viewer with nothing in flight still gets its first call in…
        held.append(fixture.holding(v3))
        // …and the operator gets the reserve.
        held.append(fixture.holding(op))
        try await eventually("fixture.server.statistics.inFlight == 6") { fixture.server.statistics.inFlight == 6 }
        // Now the server is full for calls beyond a client's first.
        let busy = await fixture.refusal(op)
        #expect(busy?.code == .resourceExhausted)
        #expect(busy?.message.hasPrefix("the server is busy: 6 calls are in flight") == true)
        #expect(fixture.server.statistics.lastRejection?.hasPrefix("client \"operator-1\": the server is busy") == true)
        for task in held { task.cancel() }
        for task in held { _ = await task.result }
        try await eventually("fixture.server.statistics.inFlight == 0") { fixture.server.statistics.inFlight == 0 }
    }

    @Test func admissionRules() {
        let limits = CallAdmission.Limits(perConnection: 2, perClient: 3, total: 4, guaranteedPerClient: 1, operatorReserve: 1)
        var admission = CallAdmission(limits: limits)
        func caller(_ connection: UInt8, _ client: String, _ role: ClientRole = .viewer) -> CallAdmission.Caller {
            .init(connection: PeerID(bytes: [connection]), client: client, role: role, clientLabel: client)
        }
        let a1 = caller(1, "a"), a2 = caller(2, "a")
        admission.add(a1)
        admission.add(a1)
        #expect(admission.refusal(for: a1)?.hasPrefix("2 calls from this connection") == true)
        #expect(admission.refusal(for: a2) == nil)
        admission.add(a2)
        #expect(admission.refusal(for: a2) == "3 calls of a are already in flight (at most 3 per client)")
        // Viewers stop at 4 − 1 = 3; a viewer's first call still gets in; an operator's too,
        // then the total is reached.
        #expect(admission.refusal(for: caller(3, "b"))  == nil)
        admission.add(caller(3, "b"))
        #expect(admission.refusal(for: caller(3, "b"))?.hasPrefix("the server is busy") == true)
        #expect(admission.refusal(for: caller(4, "op", .operator)) == nil)
        admission.add(caller(4, "op", .operator))
        #expect(admission.total == 5)
        admission.remove(a1)
        admission.remove(a1)
        admission.remove(a2)
        #expect(admission.calls(ofClient: "a") == 0)
        #expect(admission.total == 2 && admission.viewers == 1)
        #expect(admission.refusal(for: a1) == nil)
    }

    // MARK: Expensive envelopes

    @Test func metadataBombIsRefusedBeforeDecoding() async throws {
        let echo = try EchoServer()
        defer { echo.stop() }
        let raw = try RawDealer(echo.endpoint)
        var bomb = RawDealer.envelope(7)
        bomb.metadata = Dictionary(uniqueKeysWithValues: (0..<300_000).map { ("k\($0)", "v") })
        let bytes: [UInt8] = try bomb.serializedBytes()
        #expect(bytes.count > 3_000_000)
        raw.send([Array(rpcSignature.utf8), bytes])
        let reply = try #require(try await raw.receive())
        #expect(reply.requestID == 7)
        #expect(reply.status.code == RpcStatusCode.invalidArgument.rawValue)
        #expect(reply.status.message == "more than 32 metadata entries; at most 32 are allowed")
        try await echo.expectHealthy()
    }

    @Test func envelopePrecheck() throws {
        func verdict(_ envelope: Earshot_V1_RequestEnvelope) throws -> EnvelopePrecheck.Verdict {
            let bytes: [UInt8] = try envelope.serializedBytes()
            return bytes.withUnsafeBytes { EnvelopePrecheck.check($0, maximumEntries: 4, maximumBytes: 100) }
        }
        func verdict(_ bytes: [UInt8]) -> EnvelopePrecheck.Verdict {
            bytes.withUnsafeBytes { EnvelopePrecheck.check($0, maximumEntries: 4, maximumBytes: 100) }
        }
        var envelope = RawDealer.envelope(9, payload: Data(repeating: 1, count: 100_000))
        envelope.metadata = ["a": "1", "b": "2", "c": "3", "d": "4"]
        #expect(try verdict(envelope) == .decode)
        envelope.metadata["e"] = "5"
        #expect(try verdict(envelope) == .refuse(requestID: 9, problem: "more than 4 metadata entries; at most 4 are allowed"))
        envelope.metadata = ["a": String(repeating: "x", count: 200)]
        #expect(try verdict(envelope) == .refuse(requestID: 9, problem: "more than 100 bytes of metadata; at most 100 are allowed"))
        // Unknown fields, groups included, are skipped — but not without end.
        var unknown = Earshot_V1_RequestEnvelope()
        unknown.requestID = 3
        var extra: [UInt8] = try unknown.serializedBytes()
        extra += [0x7B, 0x08, 0x01, 0x7C]  // group 15 { field 1 = 1 }
        #expect(verdict(extra) == .decode)
        let manyFields = try unknown.serializedBytes() as [UInt8] + Array(repeating: [0xF8, 0x01, 0x00], count: 100).flatMap { $0 }
        #expect(verdict(manyFields) == .refuse(requestID: 3, problem: "the envelope has more than 36 fields"))
        // What no decoder would take is malformed.
        #expect(verdict([0x08]) == .malformed)  // a varint cut short
        #expect(verdict([0x22, 0x05, 0x00]) == .malformed)  // a length past the end
        #expect(verdict([0x7C]) == .malformed)  // an end-group with no group
        #expect(verdict([0x0E]) == .malformed)  // wire type 6
        #expect(verdict([]) == .decode)  // an empty message is valid protobuf (request id 0)
    }

    // MARK: Connection floods

    @Test func connectionsOverTheLimitAreTurnedAwayAndTheOthersServed() async throws {
        let limiter = ConnectionLimiter(limits: .init(maximumConnections: 6, maximumPerAddress: 6))
        let echo = try EchoServer { $0.connectionLimiter = limiter }
        defer { echo.stop() }
        #expect(limiter.statistics.guardedListeners == 1)
        let client = try makeClient(echo.endpoint)
        defer { client.close() }
        _ = try await client.call(Echo.say, Echo.request("before"))
        let flood = try ConnectionFlood(endpoint: echo.endpoint, connections: 40)
        // The door closes at the limit: the kernel drops new connection requests.
        try await eventually("limiter.statistics.closedToNewConnections") { limiter.statistics.closedToNewConnections }
        #expect(limiter.statistics.peak <= 6)
        // The client that was in keeps being served during the flood.
        for i in 0..<20 {
            let reply = try await client.call(Echo.say, Echo.request("during \(i)"))
            #expect(reply.service == "during \(i)")
            #expect(limiter.statistics.open <= 6)
        }
        flood.stop()
        // Once the flood is over, its places free up, the door opens and newcomers get in.
        try await eventually("limiter.statistics.open == 1 && !limiter.statistics.closedToNewConnections") { limiter.statistics.open == 1 && !limiter.statistics.closedToNewConnections }
        #expect(limiter.statistics.closings >= 1)
        try await echo.expectHealthy()
    }

    @Test func anAddressAtItsLimitIsTurnedAwayAlone() async throws {
        // Loopback has many addresses: 127.0.0.1 floods, 127.0.0.2 is a newcomer.
        let limiter = ConnectionLimiter(limits: .init(maximumConnections: 40, maximumPerAddress: 5))
        let echo = try EchoServer { $0.connectionLimiter = limiter }
        defer { echo.stop() }
        let flood = try ConnectionFlood(endpoint: echo.endpoint, connections: 30)
        defer { flood.stop() }
        try await eventually("limiter.statistics.blockedAddresses == 1") { limiter.statistics.blockedAddresses == 1 }
        #expect(!limiter.statistics.closedToNewConnections)
        // libzmq's "source;peer" endpoint: connect from 127.0.0.2.
        let newcomer = try makeClient(echo.endpoint.replacingOccurrences(of: "tcp://", with: "tcp://127.0.0.2:0;"))
        defer { newcomer.close() }
        let reply = try await newcomer.call(Echo.say, Echo.request("from elsewhere"))
        #expect(reply.service == "from elsewhere")
        #expect(limiter.statistics.open <= 6)
    }
}
