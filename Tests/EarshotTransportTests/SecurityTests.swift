import EarshotTestSupport
import EarshotWire
import Foundation
import Testing

@testable import EarshotTransport

/// A CURVE server with one method per role, and clients of every kind, over loopback.
final class SecureServer: Sendable {
    static let viewing = RpcMethod<Earshot_V1_HealthCheckRequest, Earshot_V1_HealthCheckRequest>("/earshot.test.Roles/View")
    static let operating = RpcMethod<Earshot_V1_HealthCheckRequest, Earshot_V1_HealthCheckRequest>("/earshot.test.Roles/Operate")
    static let administering = RpcMethod<Earshot_V1_HealthCheckRequest, Earshot_V1_HealthCheckRequest>("/earshot.test.Roles/Administer")

    let loop: TransportLoop
    let server: RpcServer
    let endpoint: String
    let keyPair: CurveKeyPair
    let allowList: ClientAllowList
    let clientKeys: [ClientRole: CurveKeyPair]
    /// The User-Id each call saw.
    let userIDs = Recorder<String>()

    init() throws {
        keyPair = try CurveKeyPair.generate()
        var keys: [ClientRole: CurveKeyPair] = [:]
        for role in ClientRole.allCases { keys[role] = try CurveKeyPair.generate() }
        clientKeys = keys
        allowList = ClientAllowList(ClientRole.allCases.map { .init(publicKey: keys[$0]!.publicKey, name: "\($0.rawValue)-1", role: $0) })
        var configuration = RpcServer.Configuration(endpoints: ["tcp://127.0.0.1:0"])
        configuration.security = ServerSecurity(keyPair: keyPair, allowList: allowList)
        loop = try TransportLoop()
        server = try RpcServer(loop: loop, configuration: configuration)
        endpoint = server.boundEndpoints[0]
        let userIDs = self.userIDs
        for (method, role) in [(Self.viewing, ClientRole.viewer), (Self.operating, .operator), (Self.administering, .admin)] {
            server.register(method, role: role) { request, call in
                userIDs.record(call.userID ?? "")
                return request
            }
        }
        loop.start()
    }

    deinit { loop.stop() }

    func client(_ keys: CurveKeyPair?, serverKey: String? = nil) throws -> RpcClient {
        try makeClient(endpoint) { configuration in
            if let keys { configuration.security = ClientSecurity(serverPublicKey: serverKey ?? keyPair.publicKey, keyPair: keys) }
        }
    }
}

@Suite("CURVE and roles") struct SecurityTests {
    @Test func eachRoleGetsItsMethodsAndNoMore() async throws {
        let secure = try SecureServer()
        let methods = [(SecureServer.viewing, ClientRole.viewer), (SecureServer.operating, .operator), (SecureServer.administering, .admin)]
        for role in ClientRole.allCases {
            let client = try secure.client(secure.clientKeys[role])
            defer { client.close() }
            for (method, needed) in methods {
                do {
                    let reply = try await client.call(method, Echo.request("hi"))
                    #expect(role >= needed, "\(role) called \(method.path)")
                    #expect(reply.service == "hi")
                } catch {
                    #expect(role < needed, "\(role) was refused \(method.path): \(error)")
                    #expect(error.code == .permissionDenied)
                    #expect(error.message.contains(needed.rawValue))
                }
            }
        }
        #expect(Set(secure.userIDs.all) == ["viewer-1:viewer", "operator-1:operator", "admin-1:admin"])
        #expect(secure.server.statistics.denied == 3)
    }

    /// Every stranger is refused, and counted by the ZAP handler; each learns it at once (its
    /// socket monitor sees the refusal), not at its deadline, and is told why.
    @Test func unknownKeysAreAllRefused() async throws {
        let secure = try SecureServer()
        let strangers = 20
        let start = ContinuousClock.now
        try await withThrowingTaskGroup(of: RpcError?.self) { group in
            for _ in 0..<strangers {
                let client = try secure.client(try CurveKeyPair.generate())
                group.addTask {
                    defer { client.close() }
                    do throws(RpcError) {
                        _ = try await client.call(SecureServer.viewing, Echo.request("let me in"), timeout: .seconds(30))
                        return nil
                    } catch { return error }
                }
            }
            for try await error in group {
                #expect(error?.code == .unauthenticated)
                #expect(error?.message == "\(secure.endpoint) refused this client's key (not in its allow-list?)")
            }
        }
        #expect(ContinuousClock.now - start < .seconds(15), "refused clients waited for their deadline")
        #expect(secure.allowList.rejections.count >= strangers)
        #expect(secure.userIDs.all.isEmpty)
    }

    @Test func wrongServerKeyAndPlainClientsGetNothingAndAreToldWhy() async throws {
        let secure = try SecureServer()
        let impostorServer = try CurveKeyPair.generate().publicKey
        // One at a time, so that the server's monitor can say why each was refused (what the
        // administrator reads in the log).
        for (keys, serverKey, why) in [(secure.clientKeys[.admin], impostorServer, "wrong server public key"),
                                       (nil, nil, "without CURVE keys")] {
            let before = secure.allowList.rejections.failedHandshakes
            let client = try secure.client(keys, serverKey: serverKey)
            do {
                _ = try await client.call(SecureServer.viewing, Echo.request("hi"), timeout: .milliseconds(1500))
                Issue.record("a client without the right keys was answered")
            } catch {
                // A plain client learns at once (libzmq gives up); one with the wrong server key
                // is dropped in each handshake and retried until its deadline.
                if keys == nil {
                    #expect(error.code == .unauthenticated)
                    #expect(error.message == "\(secure.endpoint) uses CURVE, and this client has no keys")
                } else {
                    #expect(error.code == .deadlineExceeded)
                    #expect(error.message == "no CURVE handshake with \(secure.endpoint): wrong server key? (it closed the connection during the handshake); waited 1.5 s")
                }
            }
            client.close()
            // The server's monitor reports handshakes on its own thread, after the client's call
            // has ended: the failure is awaited, not expected at once.
            _ = try await eventually("the server logs why the handshake failed (\(why))", { secure.allowList.rejections }, until: {
                $0.failedHandshakes > before && $0.lastFailure?.contains(why) == true
            })
        }
        #expect(secure.userIDs.all.isEmpty)
    }

    /// A client whose server is not there, or does not use CURVE, is told which: nothing
    /// answered at that address (at the deadline), or the two sides' security differ (at once).
    @Test func noServerAndAPlainServerAreToldApart() async throws {
        let nobody = try makeClient("tcp://127.0.0.1:9")
        defer { nobody.close() }
        do {
            _ = try await nobody.call(Echo.say, Echo.request("anyone?"), timeout: .milliseconds(800))
            Issue.record("nobody answered")
        } catch {
            #expect(error.code == .deadlineExceeded)
            #expect(error.message == "no answer from tcp://127.0.0.1:9 (is earshotd running there and listening on that address?); waited 0.8 s")
        }
        #expect(!nobody.hasConnected)

        let plain = try EchoServer()
        defer { plain.loop.stop() }
        let curve = try makeClient(plain.endpoint) { configuration in
            configuration.security = ClientSecurity(serverPublicKey: try! CurveKeyPair.generate().publicKey, keyPair: try! CurveKeyPair.generate())
        }
        defer { curve.close() }
        let start = ContinuousClock.now
        do {
            _ = try await curve.call(Echo.say, Echo.request("hi"), timeout: .seconds(30))
            Issue.record("a CURVE client was answered by a plain server")
        } catch {
            #expect(error.code == .unauthenticated)
            #expect(error.message == "\(plain.endpoint) does not use CURVE but this client does (security.mode = \"none\" there?)")
        }
        #expect(ContinuousClock.now - start < .seconds(15))
    }

    /// Edits apply without restarting: a new key gets in, a removed one is refused new
    /// connections and, on its open connection, every later call.
    @Test func allowListChangesApplyAtOnce() async throws {
        let secure = try SecureServer()
        let newcomer = try CurveKeyPair.generate()
        let operatorKeys = secure.clientKeys[.operator]!
        let open = try secure.client(operatorKeys)
        defer { open.close() }
        _ = try await open.call(SecureServer.operating, Echo.request("before"))

        var entries = secure.allowList.entries.filter { $0.publicKey != operatorKeys.publicKey }
        entries.append(.init(publicKey: newcomer.publicKey, name: "newcomer", role: .viewer))
        secure.allowList.replace(with: entries)

        let joined = try secure.client(newcomer)
        defer { joined.close() }
        #expect(try await joined.call(SecureServer.viewing, Echo.request("new")).service == "new")
        do {
            _ = try await open.call(SecureServer.viewing, Echo.request("after"))
            Issue.record("a revoked key was served on its open connection")
        } catch {
            #expect(error.code == .unauthenticated)
        }
        let reconnecting = try secure.client(operatorKeys)
        defer { reconnecting.close() }
        do {
            _ = try await reconnecting.call(SecureServer.viewing, Echo.request("again"), timeout: .milliseconds(1500))
            Issue.record("a revoked key connected again")
        } catch {
            #expect(error.code == .unauthenticated)
        }
    }

    @Test func eventsReachOnlyListedSubscribers() async throws {
        let serverKeys = try CurveKeyPair.generate()
        let listed = try CurveKeyPair.generate()
        let allowList = ClientAllowList([.init(publicKey: listed.publicKey, name: "board", role: .viewer)])
        let loop = try TransportLoop()
        loop.start()
        defer { loop.stop() }
        let publisher = try EventPublisher(
            loop: loop, endpoints: ["tcp://127.0.0.1:0"], epoch: 7, heartbeatInterval: .milliseconds(50),
            security: ServerSecurity(keyPair: serverKeys, allowList: allowList))
        let endpoint = publisher.boundEndpoints[0]
        let member = try EventSubscriber(endpoint: endpoint, topics: [""],
                                         security: ClientSecurity(serverPublicKey: serverKeys.publicKey, keyPair: listed))
        let stranger = try EventSubscriber(endpoint: endpoint, topics: [""],
                                           security: ClientSecurity(serverPublicKey: serverKeys.publicKey, keyPair: try .generate()))
        let plain = try EventSubscriber(endpoint: endpoint, topics: [""])
        defer {
            member.close()
            stranger.close()
            plain.close()
        }
        let memberLog = EventLog(member), strangerLog = EventLog(stranger), plainLog = EventLog(plain)
        try await memberLog.waitForHeartbeat()
        try await eventually("a key not in the list is refused") { allowList.rejections.count >= 1 }
        // While the member hears a few more heartbeats, the others hear nothing.
        let memberHeard = memberLog.events.all.count
        try await eventually("the member hears three more heartbeats") { memberLog.events.all.count >= memberHeard + 3 }
        #expect(strangerLog.events.all.isEmpty)
        #expect(plainLog.events.all.isEmpty)
        #expect(allowList.rejections.count >= 1)
    }

    /// A key removed from the allow-list loses its open subscription; the listed subscriber
    /// reconnects by itself and hears the publisher again.
    @Test func revokedSubscriberIsCutOff() async throws {
        let serverKeys = try CurveKeyPair.generate()
        let kept = try CurveKeyPair.generate(), revoked = try CurveKeyPair.generate()
        let allowList = ClientAllowList([.init(publicKey: kept.publicKey, name: "kitchen", role: .viewer),
                                         .init(publicKey: revoked.publicKey, name: "old-tablet", role: .viewer)])
        let loop = try TransportLoop()
        loop.start()
        defer { loop.stop() }
        let publisher = try EventPublisher(
            loop: loop, endpoints: ["tcp://127.0.0.1:0"], epoch: 9, heartbeatInterval: .milliseconds(50),
            security: ServerSecurity(keyPair: serverKeys, allowList: allowList))
        let endpoint = publisher.boundEndpoints[0]
        func subscriber(_ keys: CurveKeyPair) throws -> EventSubscriber {
            try EventSubscriber(endpoint: endpoint, topics: [""], security: ClientSecurity(serverPublicKey: serverKeys.publicKey, keyPair: keys))
        }
        let keptSubscriber = try subscriber(kept), revokedSubscriber = try subscriber(revoked)
        defer {
            keptSubscriber.close()
            revokedSubscriber.close()
        }
        let keptLog = EventLog(keptSubscriber), revokedLog = EventLog(revokedSubscriber)
        try await keptLog.waitForHeartbeat()
        try await revokedLog.waitForHeartbeat()

        allowList.replace(with: allowList.entries.filter { $0.publicKey != revoked.publicKey })
        // Whatever was already on its way may still arrive; after that, nothing. The subscribers
        // are reset together, and the listed one comes back: from its next event on, count.
        try await eventually("the subscribers are reset") { publisher.statistics.resets == 1 }
        let keptAtReset = keptLog.events.all.count
        try await eventually("the listed subscriber hears the publisher again") { keptLog.events.all.count > keptAtReset + 1 }
        let revokedHeard = revokedLog.events.all.count, keptHeard = keptLog.events.all.count
        try await eventually("the listed subscriber hears six more events") { keptLog.events.all.count > keptHeard + 5 }
        #expect(revokedLog.events.all.count == revokedHeard, "the revoked key still receives events")
        #expect(publisher.statistics.resets == 1)
        #expect(allowList.rejections.count >= 1, "the revoked key tried again and was refused")
    }

    @Test func keysRoundTripThroughFiles() throws {
        let scratch = try TemporaryDirectory("earshot-keys")
        let folder = scratch.url
        let pair = try CurveKeyPair.generate()
        let secret = folder.appendingPathComponent("a.key").path
        try CurveKeyFile.writeSecret(pair, to: secret, comment: "test")
        #expect(try CurveKeyFile.readKeyPair(secret) == pair)
        let mode = try FileManager.default.attributesOfItem(atPath: secret)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try CurveKeyFile.key(fromTextOrFile: pair.publicKey) == pair.publicKey)
        #expect(throws: CurveKeyFile.Problem.self) { try CurveKeyFile.key(fromTextOrFile: "not a key") }
        #expect(!CurveKeyPair.isValidKey(String(pair.publicKey.dropLast())))
    }
}
