import EarshotCore
import EarshotLive
import EarshotTransport
import EarshotWire
import FoundationEssentials

/// `earshot.v1.Session`: the snapshot a late-joining dashboard starts from.
final class SessionService: Sendable {
    private let session: ManagedSession
    private let events: DaemonEvents
    /// The capture device or file the session listens to.
    let sourceName: String
    private let cueState: @Sendable () -> Earshot_V1_CueState

    init(session: ManagedSession, events: DaemonEvents, sourceName: String,
         cueState: @escaping @Sendable () -> Earshot_V1_CueState) {
        self.session = session
        self.events = events
        self.sourceName = sourceName
        self.cueState = cueState
    }

    func register(on server: RpcServer) {
        server.register(Methods.Session.getSnapshot, role: .viewer) { [self] _, _ throws(RpcError) in snapshot() }
    }

    /// The state now. Topic heads are read before the state: an event published in between is
    /// then newer than the heads say, and applying it again is harmless (events carry full state);
    /// the other order could hide a change.
    func snapshot() -> Earshot_V1_SessionSnapshot {
        let heads = events.publisher.heads
        let status = session.status
        var s = Earshot_V1_SessionSnapshot()
        s.state = Earshot_V1_SessionState(status.state)
        s.captureProblem = status.captureProblem ?? ""
        s.windowSeconds = status.window
        s.heardSeconds = status.heard
        if let item = status.currentMatch { s.currentMatch = Earshot_V1_MatchedMediaItem(item) }
        s.epoch = events.epoch
        s.topicSeq = heads
        s.takenAtUnixMs = Int64((Date().timeIntervalSince1970 * 1000).rounded())
        var c = Earshot_V1_CaptureStatistics()
        c.source = sourceName
        c.framesCaptured = UInt64(max(0, status.sourceStatistics.framesCaptured))
        c.xruns = UInt64(max(0, status.sourceStatistics.xruns))
        c.droppedSamples = UInt64(max(0, status.sourceStatistics.droppedSamples))
        c.reopenAttempts = UInt64(max(0, status.sourceStatistics.reopenAttempts))
        c.gaps = UInt64(max(0, status.sourceStatistics.gaps))
        s.capture = c
        s.cues = cueState()
        return s
    }
}
