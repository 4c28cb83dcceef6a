import EarshotLive
import Logging

/// Session state → events, health and the log. The session reports a capture problem once per
/// reason and clears it only when new audio arrives, so each line logged here is a change.
enum CaptureStatusLog {
    static func watch(session: ManagedSession, sessionService: SessionService, events: DaemonEvents,
                      health: HealthService, logger: Logger) -> Task<Void, Never> {
        let source = sessionService.sourceName
        return Task {
            var problem: String?
            var problemSince = ContinuousClock.now
            var reopens = 0
            for await status in session.statusUpdates() {
                events.publishSession(sessionService.snapshot())
                // Opened again while it played, without a failure: the file was replaced.
                let reopened = status.sourceStatistics.reopenAttempts
                if reopened > reopens, problem == nil, status.captureProblem == nil {
                    logger.notice("audio source \(source) changed while it played (the file was replaced or rewritten): listening to it from its start")
                }
                reopens = reopened
                if status.captureProblem != problem {
                    if let p = status.captureProblem {
                        if problem == nil { problemSince = .now }
                        logger.warning("audio capture: \(p)")
                    } else if problem != nil {
                        let seconds = ((ContinuousClock.now - problemSince) / .milliseconds(100)).rounded() / 10
                        logger.notice("audio capture works again after \(seconds) s without audio")
                    }
                    problem = status.captureProblem
                    health.setCaptureProblem(problem)
                }
            }
        }
    }
}
