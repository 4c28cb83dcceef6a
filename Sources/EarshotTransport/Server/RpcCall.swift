import EarshotSync

/// What a handler knows about the call it serves, and how it learns that the call is over.
///
/// The transport cannot interrupt a handler. It cancels the handler's task (so `Task.sleep`
/// and other cancellable waits end) and marks the call; long handlers check `isCancelled`
/// between steps and give up.
public final class RpcCall: Sendable {
    /// "/earshot.v1.Recognizer/Match".
    public let method: String
    /// The client's id for the call, unique among its calls in flight.
    public let requestID: UInt64
    /// The client's ZeroMQ routing id, in hex: which connection the call came on.
    public let peer: String
    public let metadata: [String: String]
    /// When the call is over whatever the handler does: receive time + the client's timeout.
    public let deadline: ContinuousClock.Instant
    /// ZAP's user id for the connection ("name:role") when security is on; nil without.
    public let userID: String?
    /// The caller's role as of this call (admin without security).
    public let role: ClientRole

    private let reason = Locked<RpcError?>(nil)

    init(method: String, requestID: UInt64, peer: String, metadata: [String: String],
         deadline: ContinuousClock.Instant, userID: String?, role: ClientRole = .admin) {
        self.method = method
        self.requestID = requestID
        self.peer = peer
        self.metadata = metadata
        self.deadline = deadline
        self.userID = userID
        self.role = role
    }

    /// The caller's name from the allow-list (the part of `userID` before ':'), nil without security.
    public var clientName: String? {
        guard let userID, let colon = userID.lastIndex(of: ":") else { return nil }
        return String(userID[..<colon])
    }

    /// True once the client cancelled, the deadline passed, the client went away or the server
    /// is shutting down. Answers nobody will read are wasted work.
    public var isCancelled: Bool {
        cancellationReason() != nil
    }

    /// Why the call is over (CANCELLED, DEADLINE_EXCEEDED, UNAVAILABLE…), nil while it is not.
    /// A handler that gives up can throw this.
    public func cancellationReason() -> RpcError? {
        if let reason = reason.withLock({ $0 }) { return reason }
        if ContinuousClock.now >= deadline { return RpcError(.deadlineExceeded, "the call's deadline passed") }
        return nil
    }

    /// Time left before the deadline (zero once passed), to hand on to calls this handler makes.
    public var remainingTime: Duration {
        max(.zero, ContinuousClock.now.duration(to: deadline))
    }

    /// Records why the call ended; the first reason wins.
    func cancel(_ error: RpcError) {
        reason.withLock { if $0 == nil { $0 = error } }
    }
}
