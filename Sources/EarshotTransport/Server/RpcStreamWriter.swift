import FoundationEssentials
import SwiftProtobuf

/// Sends the items of a server-streaming call.
public final class RpcStreamWriter<Response: SwiftProtobuf.Message>: Sendable {
    private let sink: StreamSink

    init(_ sink: StreamSink) {
        self.sink = sink
    }

    /// Queues `message` for the client. Never blocks. Throws the call's end (CANCELLED,
    /// DEADLINE_EXCEEDED, UNAVAILABLE…) once it is over, or RESOURCE_EXHAUSTED when the client
    /// is not reading fast enough: the server does not buffer for a slow client, it ends the
    /// stream (the handler should then stop, rethrowing the error is fine).
    public func send(_ message: Response) throws(RpcError) {
        let payload: Data
        do {
            payload = try message.serializedBytes()
        } catch {
            throw RpcError(.internal, "cannot encode a \(Response.protoMessageName): \(error)")
        }
        try sink.send(payload)
    }
}
