import CZMQ

/// One event from libzmq's socket monitor: the event (`ZMQ_EVENT_…`) and its value (a
/// descriptor, an error or a status code, by event).
struct MonitorEvent {
    let event: Int32
    let value: Int32

    /// The next event waiting on the monitor's reading socket, without waiting; nil when none.
    static func receive(from pair: ZMQSocket) -> MonitorEvent? {
        // An event is two frames: 6 bytes (event id u16, value u32, host order), then the endpoint.
        guard let message = try? pair.receive(maximumFrames: 1), let head = message.frames.first, head.count >= 6 else { return nil }
        let (event, value) = head.withUnsafeBytes { ($0.loadUnaligned(as: UInt16.self), $0.loadUnaligned(fromByteOffset: 2, as: UInt32.self)) }
        return MonitorEvent(event: Int32(event), value: Int32(bitPattern: value))
    }
}
