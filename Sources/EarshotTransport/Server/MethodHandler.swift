import FoundationEssentials

/// How a handler's call ended: a unary reply's payload (empty for a stream), or an error.
enum HandlerOutcome: Sendable {
    case ok(Data)
    case failed(RpcError)
}

/// A registered handler with its types erased: payload in, outcome out. The typed closures in
/// `RpcServer.register` decode the request and encode the reply inside the handler's task, so
/// the loop thread never spends time on payloads.
struct MethodHandler: Sendable {
    /// Callers with a lower role get PERMISSION_DENIED without the handler running.
    let minimumRole: ClientRole
    let run: @Sendable (Data, RpcCall, StreamSink) async -> HandlerOutcome
}
