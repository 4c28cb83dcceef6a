import Synchronization

/// One accepted call on the server, from its arrival until its handler returns.
///
/// The call is "ended" once its END is sent (or cannot be: the peer left); its handler may still
/// run after that, and the call keeps counting against the in-flight limits until it returns, so
/// handlers that ignore cancellation cannot pile up.
final class ServerCall: @unchecked Sendable {
    let key: CallKey
    let call: RpcCall
    let timeout: Duration
    /// Who it counts against in the in-flight limits.
    let caller: CallAdmission.Caller

    // Loop thread only.
    var ended = false
    var nextItemSeq: UInt32 = 0
    var task: Task<Void, Never>?

    // Any thread.
    /// Stream items handed to the loop and not sent yet.
    let queuedItems = Atomic<Int>(0)
    let handlerReturned = Atomic<Bool>(false)

    init(key: CallKey, call: RpcCall, timeout: Duration, caller: CallAdmission.Caller) {
        self.key = key
        self.call = call
        self.timeout = timeout
        self.caller = caller
    }
}
