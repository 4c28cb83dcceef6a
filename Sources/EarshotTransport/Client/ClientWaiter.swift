import FoundationEssentials

/// Receives the items and the end of one client stream. `expectedItemSeq` is the loop
/// thread's; the closures feed the caller's `AsyncThrowingStream`.
final class StreamReceiver: @unchecked Sendable {
    /// Decodes and yields one item; returns the error if it does not decode.
    let deliver: @Sendable (Data) -> RpcError?
    /// Ends the stream: nil for OK.
    let finish: @Sendable (RpcError?) -> Void
    var expectedItemSeq: UInt32 = 0

    init(deliver: @escaping @Sendable (Data) -> RpcError?, finish: @escaping @Sendable (RpcError?) -> Void) {
        self.deliver = deliver
        self.finish = finish
    }
}

/// Who waits for a client call's answer.
enum ClientWaiter: Sendable {
    /// A unary call: resumed once with the END's payload or error.
    case unary(CheckedContinuation<Result<Data, RpcError>, Never>)
    /// A PING: resumed by the PONG.
    case ping(CheckedContinuation<Result<Data, RpcError>, Never>)
    case stream(StreamReceiver)

    var isStream: Bool {
        if case .stream = self { true } else { false }
    }

    func succeed(_ payload: Data) {
        switch self {
        case .unary(let continuation), .ping(let continuation): continuation.resume(returning: .success(payload))
        case .stream(let receiver): receiver.finish(nil)
        }
    }

    func fail(_ error: RpcError) {
        switch self {
        case .unary(let continuation), .ping(let continuation): continuation.resume(returning: .failure(error))
        case .stream(let receiver): receiver.finish(error)
        }
    }
}

/// A call the client waits on, with its local deadline.
struct PendingCall: Sendable {
    let waiter: ClientWaiter
    let deadline: ContinuousClock.Instant
    let timeout: Duration
}
