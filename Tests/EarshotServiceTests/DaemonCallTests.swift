import EarshotCore
import EarshotTestSupport
import EarshotTransport
import EarshotWire
import Foundation
import Testing

extension InProcessDaemonTests {
    /// earshotd's service on loopback, driven by the Swift client: the calls a second-screen app
    /// makes, the events a dashboard reads, and faults — after each fault the daemon still serves.
    @Suite("earshotd calls", .serialized)
    struct DaemonCallTests {
        /// The programme plays piece 1 from 10 s to 50 s and loops. A window that spans the loop
        /// point matches one side of it: the part after the loop (its start then lies before 10 s
        /// in reference time) or the part before (then "now" is extrapolated past 50 s, by less
        /// than the 12 s window). Either way the match lies within piece 1's 10–50 s, give or take
        /// a window.
        private func expectPiece1(_ item: Earshot_V1_MatchedMediaItem) {
            #expect(item.mediaItem.id == "piece1")
            #expect(item.predictedCurrentMatchOffset >= 9.9 && item.predictedCurrentMatchOffset <= 62.2,
                    "now at \(item.predictedCurrentMatchOffset) s, window from \(item.matchOffset) s")
            #expect(item.matchOffset >= -2.1 && item.matchOffset <= 50.2, "window from \(item.matchOffset) s")
            #expect(abs(item.frequencySkew) < 0.005)
            #expect(item.confidence > 0.3)
        }

        /// A well-behaved client gets a correct answer (checked after every fault).
        private func stillServes(_ daemon: some RunningDaemon) async throws {
            let client = try daemon.client()
            defer { client.close() }
            let result = try await client.call(Methods.Recognizer.match, Earshot_V1_MatchRequest(), timeout: .seconds(60))
            #expect(result.outcome == .match)
            if let top = result.items.first { expectPiece1(top) }
        }

        @Test func prepareThenMatchAnswersFromTheWindow() async throws {
            try await InProcessDaemon.with(settings: ["--session.follow=false", "--session.prepare_on_start=false"]) { daemon in
                let client = try daemon.client()
                defer { client.close() }
                let prepared = try await client.call(Methods.Recognizer.prepare, Earshot_V1_PrepareRequest())
                #expect(prepared.state == .prerecording)
                try await eventually("4 s of the programme are heard", every: .milliseconds(100), {
                    try await client.call(Methods.Session.getSnapshot, Earshot_V1_GetSnapshotRequest()).heardSeconds
                }, until: { $0 >= 4 })
                let result = try await client.call(Methods.Recognizer.match, Earshot_V1_MatchRequest())
                #expect(result.outcome == .match)
                let top = try #require(result.items.first)
                expectPiece1(top)
                #expect(top.catalog == "show")
                // Answered from audio already heard (how fast is the daemon benchmark's business).
                #expect(result.streamTime >= 3.5)
                let snapshot = try await client.call(Methods.Session.getSnapshot, Earshot_V1_GetSnapshotRequest())
                #expect(snapshot.state == .prerecording)
                #expect(snapshot.heardSeconds >= 3.5)
                #expect(snapshot.currentMatch.mediaItem.id == "piece1")
                await daemon.stop()
                #expect(daemon.log.contains("stopping"))
            }
        }

        @Test func streamedResultsAndLateJoiningDashboard() async throws {
            try await InProcessDaemon.with { daemon in
                // The dashboard subscribes first, then takes the snapshot.
                let subscriber = try EventSubscriber(endpoint: daemon.eventsEndpoint, topics: [Topics.match, Topics.session, Topics.heartbeat],
                                                     security: daemon.security(.viewer))
                defer { subscriber.close() }
                let client = try daemon.client()
                defer { client.close() }
                var streamed: Earshot_V1_MatchResult?
                for try await r in client.stream(Methods.Recognizer.streamMatches, Earshot_V1_StreamMatchesRequest(), timeout: .seconds(60)) {
                    if r.outcome == .match {
                        streamed = r
                        break  // dropping the stream cancels it on the daemon
                    }
                }
                let first = try #require(streamed?.items.first)
                expectPiece1(first)

                let snapshot = try await client.call(Methods.Session.getSnapshot, Earshot_V1_GetSnapshotRequest())
                let snapshotTaken = ContinuousClock.now
                var sawHeartbeat = false, sawNewer = false, dropped = 0
                var lastSeq: [String: UInt64] = [:]
                for await event in subscriber.events {
                    #expect(event.epoch == snapshot.epoch)
                    if let previous = lastSeq[event.topic] { #expect(event.seq == previous + 1, "per-topic seq has no gaps") }
                    lastSeq[event.topic] = event.seq
                    if case .heartbeat(let hb) = event.body {
                        // A heartbeat sent a second after the snapshot knows at least what it knew.
                        if ContinuousClock.now - snapshotTaken > .milliseconds(1100) {
                            sawHeartbeat = true
                            #expect(hb.heads[Topics.match, default: 0] >= snapshot.topicSeq[Topics.match, default: 0])
                        }
                    } else if event.seq <= snapshot.topicSeq[event.topic, default: 0] {
                        dropped += 1  // already in the snapshot: a late joiner drops it
                    } else {
                        sawNewer = true
                    }
                    if sawHeartbeat && (sawNewer || dropped > 0) { break }
                }
                #expect(sawHeartbeat)
                #expect(snapshot.topicSeq[Topics.match, default: 0] >= 1, "follow mode published matches")
                try await stillServes(daemon)
            }
        }

        @Test func faultsLeaveTheDaemonServing() async throws {
            try await InProcessDaemon.with(settings: ["--rpc.max_message_bytes=65536"]) { daemon in
                let client = try daemon.client()
                defer { client.close() }

                // Unknown method.
                let unknown = RpcMethod<Earshot_V1_MatchRequest, Earshot_V1_MatchResult>("/earshot.v1.Recognizer/Nope")
                await #expect(throws: RpcError.self) { _ = try await client.call(unknown, Earshot_V1_MatchRequest()) }
                do throws(RpcError) { _ = try await client.call(unknown, Earshot_V1_MatchRequest()) } catch { #expect(error.code == .unimplemented) }

                // A payload that is not the request message.
                var garbage = Earshot_V1_MatchSignatureRequest()
                garbage.signature = Data("not a signature".utf8)
                do throws(RpcError) {
                    _ = try await client.call(Methods.Recognizer.matchSignature, garbage)
                    Issue.record("a garbage signature was accepted")
                } catch {
                    #expect(error.code == .invalidArgument)
                    #expect(error.message.contains("signature"))
                }

                // A deadline the daemon cannot meet: cancelled, the session listens from scratch.
                _ = try await client.call(Methods.Recognizer.cancel, Earshot_V1_CancelRequest())
                do throws(RpcError) {
                    _ = try await client.call(Methods.Recognizer.match, Earshot_V1_MatchRequest(), timeout: .milliseconds(200))
                    Issue.record("a match that needs a second of audio answered within 200 ms")
                } catch {
                    #expect(error.code == .deadlineExceeded)
                }
                try await stillServes(daemon)

                // A client that goes away in the middle of a stream.
                do {
                    let leaving = try daemon.client()
                    let stream = leaving.stream(Methods.Recognizer.streamMatches, Earshot_V1_StreamMatchesRequest(), timeout: .seconds(30))
                    var it = stream.makeAsyncIterator()
                    _ = try await it.next()
                    leaving.close()
                }
                try await stillServes(daemon)

                // Raw garbage on the RPC socket, and a message over rpc.max_message_bytes.
                try await RawPeer.send(to: daemon.rpcEndpoint, security: daemon.security(), frames: [Array("hello".utf8)])
                try await RawPeer.send(to: daemon.rpcEndpoint, security: daemon.security(), frames: [Array("EARSHOT/1".utf8), [0xFF, 0xFF, 0xFF, 0x01]])
                try await RawPeer.send(to: daemon.rpcEndpoint, security: daemon.security(),
                                       frames: [Array("EARSHOT/1".utf8), [UInt8](repeating: 7, count: 200_000)])
                // The garbage arrived (the oversized message is refused by libzmq, unseen).
                try await eventually("the daemon dropped the garbage", {
                    try await client.call(Methods.Health.getStats, Earshot_V1_GetStatsRequest()).counters
                }, until: { $0["rpc_dropped_frames", default: 0] >= 1 && $0["rpc_dropped_envelopes", default: 0] >= 1 })
                try await stillServes(daemon)

                let stats = try await client.call(Methods.Health.getStats, Earshot_V1_GetStatsRequest())
                #expect(stats.counters["matches", default: 0] >= 1)
                #expect(stats.counters.keys.contains { $0.hasPrefix("rpc_") })
                let health = try await client.call(Methods.Health.check, Earshot_V1_HealthCheckRequest())
                #expect(health.status == .serving)
            }
        }

        /// A box with no catalog yet starts (so a catalog can be pushed to it), says so, answers
        /// Match with a clear error, and matches once a catalog is copied in.
        @Test func noCatalogStartsAndWaitsForOne() async throws {
            let folder = try DaemonFolder()
            let catalog = folder.url.appendingPathComponent("state/catalogs/show.earcat")
            try FileManager.default.removeItem(at: catalog)
            try await InProcessDaemon.with(folder) { daemon in
                #expect(daemon.log.contains("no catalog is enabled"), "\(daemon.log)")
                let client = try daemon.client()
                defer { client.close() }
                let none = try await client.call(Methods.Recognizer.match, Earshot_V1_MatchRequest())
                #expect(none.outcome == .error && none.error.message.contains("no catalog is enabled"), "\(none)")
                try Data(DaemonFixture.shared.catalogBytes).write(to: catalog)
                let result = try await eventually("a match once the catalog is in", every: .milliseconds(200), {
                    try await client.call(Methods.Recognizer.match, Earshot_V1_MatchRequest())
                }, until: { $0.outcome == .match })
                #expect(result.items.first?.catalog == "show", "\(result)")
            }
        }
    }
}
