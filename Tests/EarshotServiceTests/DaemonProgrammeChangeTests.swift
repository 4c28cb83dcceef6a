import EarshotCore
import EarshotSync
import EarshotTestSupport
import EarshotTransport
import EarshotWire
import Foundation
import Testing

extension InProcessDaemonTests {
    /// The programme file starts over: at its loop seam (a seek the source announces) and when it is
    /// replaced by another programme (a channel change). Cues follow at once, and nothing is
    /// predicted from the programme that is gone.
    @Suite("earshotd programme restarts")
    struct DaemonProgrammeChangeTests {
        /// A StreamCues reader: every event with the moment it arrived.
        final class CueLog: Sendable {
            let events = Locked<[(event: Earshot_V1_CueEvent, at: ContinuousClock.Instant)]>([])
            private let task: Task<Void, Never>

            init(_ client: RpcClient) {
                let stream = client.stream(Methods.Cues.streamCues, Earshot_V1_StreamCuesRequest(), timeout: .seconds(600))
                let events = self.events
                task = Task {
                    do { for try await e in stream { events.withLock { $0.append((e, .now)) } } } catch {}
                }
            }

            var all: [(event: Earshot_V1_CueEvent, at: ContinuousClock.Instant)] { events.withLock { $0 } }

            func close() { task.cancel() }
        }

        static func setCues(_ client: RpcClient, on id: String, _ cues: [Earshot_V1_Cue]) async throws {
            var set = Earshot_V1_SetCuesRequest()
            set.reference.mediaItemID = id
            set.cues = cues
            _ = try await client.call(Methods.Cues.setCues, set)
        }

        /// Where the programme is now, from a Match.
        static func position(_ client: RpcClient) async throws -> (id: String, offset: Double) {
            let heard = try await client.call(Methods.Recognizer.match, Earshot_V1_MatchRequest(), timeout: .seconds(30))
            guard heard.outcome == .match, let top = heard.items.first else { return ("", -1) }
            return (top.mediaItem.id, top.predictedCurrentMatchOffset)
        }

        /// The programme (piece 1 from 10 s to 50 s) loops: the source says so, and the seek is
        /// followed within the catalog's minimum query and an attempt, not after seconds of
        /// mixed audio.
        @Test func theLoopSeamIsASeekFollowedAtOnce() async throws {
            try await InProcessDaemon.with { daemon in
                let client = try daemon.client(.operator)
                defer { client.close() }
                try await Self.setCues(client, on: "piece1", [DaemonCueTests.cue("c", 30)])
                let log = CueLog(client)
                defer { log.close() }
                let seek = try await eventually("the loop's seek", within: .seconds(75), every: .milliseconds(100), {
                    log.all.first { $0.event.kind == .seek }?.event
                }, until: { $0 != nil })!
                // Where playback had got to, and where it landed: the landing position tells how long
                // after the seam (at 10 s of piece 1) the seek was believed.
                #expect(seek.fromPosition > 45 && seek.fromPosition <= 50.3, "\(seek)")
                #expect(seek.position >= 10 && seek.position - 10 <= 2.5, "seek seen \(seek.position - 10) s after the seam: \(seek)")
            }
        }

        /// The programme file replaced by another programme while a cue is current: the old one is
        /// lost at once, its cue is not ended on a prediction afterwards, the new one is scheduled,
        /// and the log says the file changed.
        @Test func aReplacedProgrammeFileLeavesNothingPredictedFromTheOldOne() async throws {
            try await InProcessDaemon.with { daemon in
                let client = try daemon.client(.operator)
                defer { client.close() }
                // "r" is current from 30 s to 45 s of piece 1.
                try await Self.setCues(client, on: "piece1", [DaemonCueTests.cue("r", 30, duration: 15)])
                let log = CueLog(client)
                defer { log.close() }
                _ = try await eventually("the programme inside r, with time to spare before its end", within: .seconds(75),
                                         every: .milliseconds(200), { try await Self.position(client) },
                                         until: { $0.id == "piece1" && $0.offset >= 31 && $0.offset <= 40 })
                #expect(log.all.contains { $0.event.kind == .started && $0.event.cue.id == "r" })

                // Another channel: piece 2, written whole and renamed over the file.
                let tv = daemon.directory.appendingPathComponent("tv.wav")
                let staged = daemon.directory.appendingPathComponent("staged.wav")
                let other = SyntheticSignature.excerpt(DaemonFixture.shared.audio[2], start: 5, duration: 40)
                try WAVFile.write(other, sampleRate: 16_000, to: staged.path)
                let changed = ContinuousClock.now
                #expect(rename(staged.path, tv.path) == 0)
                // As soon as the new audio matches confidently (how soon is the benchmarks' business).
                _ = try await eventually("piece 2 is scheduled", within: .seconds(30), every: .milliseconds(100), {
                    log.all.first { $0.event.kind == .schedule && $0.event.schedule.programme.title == "Piece 2" }
                }, until: { $0 != nil })!

                // After the change (and the file's check, every 0.25 s), nothing about piece 1 but its loss.
                let after = log.all.filter { $0.at > changed + .milliseconds(400) && $0.event.programme.title == "Piece 1" }
                #expect(after.map(\.event.kind).allSatisfy { $0 == .programmeLost }, "\(after.map { ($0.event.kind, $0.event.cue.id) })")
                #expect(!log.all.contains { $0.event.kind == .ended && $0.event.cue.id == "r" && $0.at > changed + .milliseconds(400) })
                #expect(log.all.contains { $0.event.kind == .programmeLost && $0.event.programme.title == "Piece 1" })
                #expect(daemon.log.contains("changed while it played (the file was replaced or rewritten)"), "\(daemon.log)")
                #expect(try await Self.position(client).id == "piece2")
            }
        }
    }
}
