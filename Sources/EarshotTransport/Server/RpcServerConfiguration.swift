extension RpcServer {
    /// Endpoints and limits of an RPC server. The defaults are the protocol's (docs/PROTOCOL.md).
    public struct Configuration: Sendable {
        /// Where to listen, e.g. `["tcp://127.0.0.1:7400"]`; port 0 picks a free port
        /// (see `boundEndpoints`).
        public var endpoints: [String]
        /// Larger inbound messages make libzmq drop the message and disconnect the client
        /// (`ZMQ_MAXMSGSIZE`).
        public var maximumMessageBytes = 4 << 20
        /// More calls in flight from one connection → RESOURCE_EXHAUSTED.
        public var maximumInFlightPerPeer = 16
        /// More calls in flight from one client (a key; an address without CURVE), over all its
        /// connections → RESOURCE_EXHAUSTED.
        public var maximumInFlightPerClient = 64
        /// More calls in flight in all → RESOURCE_EXHAUSTED, except a client's first
        /// `guaranteedPerClient`, which are always let in. See `CallAdmission`.
        public var maximumInFlight = 256
        public var guaranteedPerClient = 4
        /// Of `maximumInFlight`, what viewers can never take (kept for operators and admins).
        public var operatorReserve = 64
        /// Caps connections (shared with other sockets); nil = no cap.
        public var connectionLimiter: ConnectionLimiter?
        /// The timeout of a call that gives none (`timeout_ms` 0).
        public var defaultTimeout: Duration = .seconds(30)
        /// Longer timeouts are cut to this. Long, because streams may run for hours.
        public var maximumTimeout: Duration = .seconds(24 * 3600)
        /// Bigger or longer metadata → INVALID_ARGUMENT.
        public var maximumMetadataBytes = 8192
        public var maximumMetadataEntries = 32
        /// Stream items a handler may have queued for the loop thread before `send` throws
        /// RESOURCE_EXHAUSTED; bounds what a handler outrunning the loop can pile up.
        public var maximumQueuedStreamItems = 1000
        /// Per-client queue of outgoing messages (`ZMQ_SNDHWM`); a stream that fills it ends with
        /// RESOURCE_EXHAUSTED. Also bounds `ZMQ_RCVHWM`.
        public var highWaterMark: Int32 = 1000
        /// A connection whose peer leaves data or keepalive probes unacknowledged this long is
        /// closed, which cancels its calls (see `PeerLiveness`).
        public var peerTimeout: Duration = .seconds(6)
        /// A connection must finish its handshake within this.
        public var handshakeTimeout: Duration = .seconds(5)
        /// CURVE with a ZAP allow-list; nil = plain TCP, where every caller counts as admin.
        public var security: ServerSecurity?

        public init(endpoints: [String]) {
            self.endpoints = endpoints
        }
    }
}

extension RpcServer.Configuration {
    var admissionLimits: CallAdmission.Limits {
        CallAdmission.Limits(
            perConnection: maximumInFlightPerPeer, perClient: maximumInFlightPerClient, total: maximumInFlight,
            guaranteedPerClient: guaranteedPerClient, operatorReserve: min(operatorReserve, maximumInFlight))
    }
}

extension Duration {
    /// Whole milliseconds, clamped to `Int32` for socket options.
    var socketMilliseconds: Int32 {
        let (seconds, attoseconds) = components
        let millis = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        return Int32(clamping: millis)
    }
}
