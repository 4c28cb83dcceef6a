import EarshotCore
import EarshotService
import EarshotTestSupport
import EarshotTransport
import EarshotWire
import Foundation
import Synchronization
import Testing
import EarshotSystem

extension InProcessDaemonTests {
    /// earshotd as shipped (CURVE on) over loopback: keys, roles, allow-list edits, plain mode.
    @Suite("earshotd security", .serialized)
    struct DaemonSecurityTests {
        @Test func keysRolesAndAllowListEdits() async throws {
            let folder = try DaemonFolder()
            let settings = ["--session.prepare_on_start=false", "--session.follow=false"]
            let state = folder.url.appendingPathComponent("state")
            let publicKey = try await InProcessDaemon.with(folder, settings: settings) { daemon in
                // The key pair was made on first start: secret 0600, public published and logged.
                let secretPath = state.appendingPathComponent("server.key").path
                let mode = try FileManager.default.attributesOfItem(atPath: secretPath)[.posixPermissions] as? Int
                #expect(mode == 0o600)
                let serverKey = try #require(daemon.serverPublicKey)
                #expect(try CurveKeyFile.readKeyPair(secretPath).publicKey == serverKey)
                #expect(daemon.log.contains(serverKey))
                #expect(daemon.log.contains("security self-test: an unknown key was refused"))

                // Roles: viewer < operator < admin.
                let viewer = try daemon.client(.viewer), operatorClient = try daemon.client(.operator), admin = try daemon.client(.admin)
                defer { [viewer, operatorClient, admin].forEach { $0.close() } }
                _ = try await viewer.call(Methods.Session.getSnapshot, Earshot_V1_GetSnapshotRequest())
                _ = try await viewer.call(Methods.Health.check, Earshot_V1_HealthCheckRequest())
                await expectCode(.permissionDenied) { () throws(RpcError) in _ = try await viewer.call(Methods.Recognizer.prepare, Earshot_V1_PrepareRequest()) }
                // The list is the catalog/ topic's snapshot, which a viewer subscribes to: it may read it,
                // and nothing else of Catalogs.
                #expect(try await viewer.call(Methods.Catalogs.list, Earshot_V1_ListCatalogsRequest()).catalogs.count == 1)
                var describe = Earshot_V1_DescribeCatalogRequest()
                describe.name = "show"
                await expectCode(.permissionDenied) { () throws(RpcError) in _ = try await viewer.call(Methods.Catalogs.describe, describe) }
                _ = try await operatorClient.call(Methods.Recognizer.prepare, Earshot_V1_PrepareRequest())
                _ = try await operatorClient.call(Methods.Recognizer.cancel, Earshot_V1_CancelRequest())
                await expectCode(.permissionDenied) { () throws(RpcError) in _ = try await operatorClient.call(Methods.Catalogs.describe, describe) }
                let catalogs = try await admin.call(Methods.Catalogs.list, Earshot_V1_ListCatalogsRequest())
                #expect(catalogs.catalogs.count == 1)

                // Strangers, a wrong server key and plain clients are refused: a stranger and a plain
                // client learn it at once, a wrong server key at the deadline.
                var stranger = RpcClient.Configuration()
                stranger.security = ClientSecurity(serverPublicKey: serverKey, keyPair: try .generate())
                var wrongServer = RpcClient.Configuration()
                wrongServer.security = ClientSecurity(serverPublicKey: try CurveKeyPair.generate().publicKey, keyPair: daemon.clientKeys[.admin]!)
                for (configuration, code) in [(stranger, RpcStatusCode.unauthenticated), (wrongServer, .deadlineExceeded), (RpcClient.Configuration(), .unauthenticated)] {
                    let client = try RpcClient(endpoint: daemon.rpcEndpoint, configuration: configuration)
                    defer { client.close() }
                    await expectCode(code) { () throws(RpcError) in try await client.ping(timeout: .milliseconds(1500)) }
                }

                // An edit is picked up without a restart: a newcomer gets in; the removed operator is
                // refused on its open connection, loses its open event subscription and cannot connect
                // again, while the viewer's subscription comes back by itself.
                let operatorBeats = try HeartbeatCounter(daemon, .operator), viewerBeats = try HeartbeatCounter(daemon, .viewer)
                try await eventually("both subscriptions receive heartbeats") { operatorBeats.count > 0 && viewerBeats.count > 0 }
                let newcomer = try CurveKeyPair.generate()
                let keys = daemon.clientKeys
                try AtomicFile.write(Array(DaemonHarness.allowList([(keys[.viewer]!, "viewer", .viewer), (keys[.admin]!, "admin", .admin),
                                                                    (newcomer, "newcomer", .operator)]).utf8),
                                     to: daemon.allowListURL.path)
                var joining = RpcClient.Configuration()
                joining.security = ClientSecurity(serverPublicKey: serverKey, keyPair: newcomer)
                // Refused at once until the edit is read.
                try await eventually("the newcomer is admitted after the edit", within: .seconds(30), every: .milliseconds(200)) {
                    let client = try RpcClient(endpoint: daemon.rpcEndpoint, configuration: joining)
                    defer { client.close() }
                    return (try? await client.call(Methods.Recognizer.cancel, Earshot_V1_CancelRequest(), timeout: .seconds(3))) != nil
                }
                await expectCode(.unauthenticated) { () throws(RpcError) in _ = try await operatorClient.call(Methods.Session.getSnapshot, Earshot_V1_GetSnapshotRequest()) }
                // Heartbeats already on their way when the operator was refused may still land: count its
                // heartbeats from the next one the viewer hears (the daemon sends one to both at once).
                let viewerHeardAtRefusal = viewerBeats.count
                try await eventually("the viewer's subscription comes back") { viewerBeats.count >= viewerHeardAtRefusal + 1 }
                let (operatorHeard, viewerHeard) = (operatorBeats.count, viewerBeats.count)
                try await eventually("the viewer hears two more heartbeats") { viewerBeats.count >= viewerHeard + 2 }
                #expect(operatorBeats.count == operatorHeard, "the revoked operator still receives events")
                let again = try daemon.client(.operator)
                defer { again.close() }
                await expectCode(.unauthenticated) { () throws(RpcError) in try await again.ping(timeout: .milliseconds(1500)) }

                // A broken edit keeps the previous list and says which line is wrong.
                try "\(newcomer.publicKey) newcomer superuser\n".write(to: daemon.allowListURL, atomically: true, encoding: .utf8)
                try await eventually("the broken edit is refused") { daemon.log.contains("line 1: unknown role \"superuser\"") }
                _ = try await viewer.call(Methods.Session.getSnapshot, Earshot_V1_GetSnapshotRequest())

                let stats = try await admin.call(Methods.Health.getStats, Earshot_V1_GetStatsRequest())
                #expect(stats.counters["security_refused", default: 0] >= 4)
                #expect(stats.counters["security_failed_handshakes", default: 0] >= 2, "the wrong server key and the plain client")
                #expect(stats.counters["rpc_denied", default: 0] == 3)
                return serverKey
            }

            // A restart keeps the key pair (and refuses a broken allow-list, so mend it first).
            try DaemonHarness.allowList([(folder.clientKeys[.admin]!, "admin", .admin)])
                .write(to: state.appendingPathComponent("clients.allow"), atomically: true, encoding: .utf8)
            try await InProcessDaemon.with(folder, settings: ["--session.prepare_on_start=false"]) { restarted in
                #expect(restarted.serverPublicKey == publicKey)
            }
        }

        @Test func plainModeWarnsAndServesEveryone() async throws {
            try await InProcessDaemon.with(settings: ["--security.mode=none", "--session.prepare_on_start=false"]) { daemon in
                #expect(daemon.log.contains("security.mode = \"none\""))
                let client = try RpcClient(endpoint: daemon.rpcEndpoint)
                defer { client.close() }
                _ = try await client.call(Methods.Catalogs.list, Earshot_V1_ListCatalogsRequest())
                await daemon.stop()
            }
        }

        /// Counts the heartbeats one client's subscription receives.
        private final class HeartbeatCounter: Sendable {
            private let subscriber: EventSubscriber
            private let task: Task<Void, Never>
            private final class Tally: Sendable { let value = Atomic<Int>(0) }
            private let received = Tally()
            var count: Int { received.value.load(ordering: .relaxed) }

            init(_ daemon: some RunningDaemon, _ role: ClientRole) throws {
                subscriber = try EventSubscriber(endpoint: daemon.eventsEndpoint, topics: [Topics.heartbeat], security: daemon.security(role))
                let subscriber = self.subscriber
                task = Task.detached { [received] in
                    for await _ in subscriber.events { received.value.add(1, ordering: .relaxed) }
                }
            }

            deinit {
                task.cancel()
                subscriber.close()
            }
        }

    }
}
