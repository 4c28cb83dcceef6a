/// What an RPC server has done since it started.
public struct RpcServerStatistics: Sendable, Equatable {
    /// Calls handed to a handler, by method path. (Calls to unknown methods are counted only
    /// under UNIMPLEMENTED: their names come from clients and would grow this without bound.)
    public var callsByMethod: [String: Int] = [:]
    /// ENDs sent, by status: every call's end, refusals included (UNIMPLEMENTED, ALREADY_EXISTS,
    /// RESOURCE_EXHAUSTED…).
    public var callsByStatus: [RpcStatusCode: Int] = [:]
    /// Messages without the 3-frame layout, or with an unknown first frame and an envelope that
    /// does not parse: dropped without an answer.
    public var droppedFrames = 0
    /// Messages with the right first frame and an envelope that does not parse (or has
    /// request id 0): dropped without an answer.
    public var droppedEnvelopes = 0
    /// Replies that could not be sent: the client left, or did not read for 5 s.
    public var droppedReplies = 0
    /// Sends that found the client gone (EHOSTUNREACH); its calls were cancelled.
    public var peersLost = 0
    /// Calls refused by the in-flight limits, and the last refusal ("client \"tv\": …").
    public var rejected = 0
    public var lastRejection: String?
    /// Connections closed (seen by the socket monitor) that carried a client; their calls were
    /// cancelled.
    public var disconnects = 0
    /// Calls ended because their key left the allow-list.
    public var revokedCalls = 0
    /// Calls refused because the caller's role is too low (PERMISSION_DENIED).
    public var denied = 0
    /// Handlers running now.
    public var inFlight = 0

    public init() {}
}
