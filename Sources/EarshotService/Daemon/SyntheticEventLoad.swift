import EarshotTransport
import EarshotWire
import Logging

/// Benchmarking only (`events.load_test_rate`): synthetic events at `rate` per second, in bursts
/// every 10 ms, each carrying its sequence number, to measure what the event path sustains while
/// the daemon serves.
enum SyntheticEventLoad {
    static func start(rate: Int, on publisher: EventPublisher, logger: Logger) -> Task<Void, Never> {
        logger.warning("publishing \(rate) synthetic events per second on \(Topics.loadTest) (events.load_test_rate)")
        return Task.detached {
            let start = ContinuousClock.now
            var sent = 0
            while !Task.isCancelled {
                let elapsed = ContinuousClock.now - start
                let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
                let due = Int(seconds * Double(rate))
                while sent < due {
                    publisher.publish(topic: Topics.loadTest) { e in
                        var hb = Earshot_V1_Heartbeat()
                        hb.globalSeq = UInt64(sent)
                        e.heartbeat = hb
                    }
                    sent += 1
                }
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
    }
}
