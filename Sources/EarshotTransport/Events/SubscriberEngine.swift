import EarshotWire
import Synchronization

/// The SUB socket on the loop thread.
final class SubscriberEngine: LoopAttachment, @unchecked Sendable {
    let socket: ZMQSocket
    let continuation: AsyncStream<Earshot_V1_EventEnvelope>.Continuation
    let dropped = Atomic<Int>(0)
    private var isDetached = false

    init(socket: ZMQSocket, continuation: AsyncStream<Earshot_V1_EventEnvelope>.Continuation) {
        self.socket = socket
        self.continuation = continuation
    }

    var pollSocket: ZMQSocket? { isDetached ? nil : socket }

    func socketReadable(now: ContinuousClock.Instant) {
        for _ in 0..<256 {
            guard let message = try? socket.receive(maximumFrames: 2) else { return }
            guard message.frames.count == 2, !message.truncated,
                let envelope = try? Earshot_V1_EventEnvelope(
                    serializedBytes: message.frames[1], options: WireCoding.decodingOptions)
            else {
                dropped.wrappingAdd(1, ordering: .relaxed)
                continue
            }
            if case .dropped = continuation.yield(envelope) { dropped.wrappingAdd(1, ordering: .relaxed) }
        }
    }

    func nextWakeup() -> ContinuousClock.Instant? { nil }

    func timerFired(now: ContinuousClock.Instant) {}

    func detached() {
        isDetached = true
        socket.close()
        continuation.finish()
    }
}
