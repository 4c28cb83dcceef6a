import EarshotTestSupport
import EarshotTransport
import EarshotWire
import Foundation
import Testing

extension InProcessDaemonTests {
    /// A script calling `Match` again and again on a prepared box while a clean programme plays:
    /// every call answers MATCH with the programme, wherever the window happens to start.
    @Suite("earshotd steady matches")
    struct DaemonSteadyMatchTests {
        @Test func backToBackCallsAllAnswerTheProgramme() async throws {
            try await InProcessDaemon.with { daemon in
                let client = try daemon.client(.operator)
                defer { client.close() }
                // The minimum query heard, then calls 20 ms apart until 150 different windows answered
                // (a new one every read of the source, 64 ms; fewer on a loaded machine, whose session
                // reads larger blocks less often), each cut at a different place.
                try await eventually("the minimum query is heard", every: .milliseconds(200), {
                    try await client.call(Methods.Recognizer.match, Earshot_V1_MatchRequest(), timeout: .seconds(30))
                }, until: { $0.streamTime >= 4 })
                var answers: [Earshot_V1_MatchResult] = []
                var windows = Set<Double>()
                let end = ContinuousClock.now + .seconds(45)
                while ContinuousClock.now < end, windows.count < 150 {
                    let answer = try await client.call(Methods.Recognizer.match, Earshot_V1_MatchRequest(), timeout: .seconds(10))
                    answers.append(answer)
                    windows.insert(answer.streamTime)
                    try await Task.sleep(for: .milliseconds(20))
                }
                #expect(windows.count >= 40, "only \(windows.count) different windows")
                let missed = answers.filter { $0.outcome != .match || $0.items.first?.mediaItem.id != "piece1" }
                #expect(missed.count == 0, """
                    \(missed.count) of \(answers.count) calls did not answer piece1: \
                    \(missed.map { "\($0.outcome) at stream time \($0.streamTime) s" }.joined(separator: ", "))
                    """)
            }
        }
    }
}
