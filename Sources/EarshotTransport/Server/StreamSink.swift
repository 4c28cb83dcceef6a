import FoundationEssentials

/// The untyped half of `RpcStreamWriter`: hands encoded items to the loop thread.
struct StreamSink: Sendable {
    let server: RpcServerEngine
    let call: ServerCall

    func send(_ payload: Data) throws(RpcError) {
        if call.handlerReturned.load(ordering: .acquiring) {
            throw RpcError(.failedPrecondition, "the call has already ended")
        }
        if let reason = call.call.cancellationReason() { throw reason }
        let limit = server.configuration.maximumQueuedStreamItems
        if call.queuedItems.wrappingAdd(1, ordering: .relaxed).newValue > limit {
            call.queuedItems.wrappingSubtract(1, ordering: .relaxed)
            throw RpcError(.resourceExhausted, "more than \(limit) stream items are waiting to be sent")
        }
        let server = self.server
        let call = self.call
        if !server.loop.enqueue({ server.sendItem(payload, of: call) }) {
            throw RpcError(.unavailable, "the server is shutting down")
        }
    }
}
