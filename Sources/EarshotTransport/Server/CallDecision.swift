/// What the server does with one CALL, decided before anything is sent or started: refused with
/// the error its client is told, or started. Pure, so every refusal is tested without a socket;
/// `RpcServerEngine` gathers the facts and acts on the outcome.
enum CallDecision {
    /// What the loop thread knows when a CALL arrives.
    struct Facts {
        let requestID: UInt64
        let method: String
        let metadata: [String: String]
        /// As the client asked; 0 for the server's default.
        let timeoutMilliseconds: UInt32
        /// A call with the same request id is in flight on this connection.
        let duplicate: Bool
        /// The server still takes new calls (it is not shutting down).
        let accepting: Bool
        /// The method's handler; nil when no such method is served.
        let handler: MethodHandler?
        let caller: Identity
    }

    /// Who sent the CALL.
    enum Identity {
        /// With CURVE: the allow-list's entry for the handshake's key, looked up again now (nil
        /// when the key has been removed since).
        case key(ClientAllowList.Entry?)
        /// Without CURVE there are no keys: a client is its address (and its ZAP user id, if any).
        case address(String?, userID: String?)
    }

    /// A call that may start: who it counts against, what its handler is told, and its timeout.
    struct Start {
        let handler: MethodHandler
        let caller: CallAdmission.Caller
        let userID: String?
        let timeout: Duration
    }

    enum Outcome {
        case start(Start)
        case refuse(RpcError, Count)
    }

    /// Which statistic a refusal adds to.
    enum Count: Equatable {
        case none
        /// The caller's role is too low for the method.
        case denied
        /// The in-flight limits were full; the text is the reason, for `lastRejection`.
        case rejected(String)
    }

    static func decide(_ facts: Facts, on connection: PeerID, admission: CallAdmission,
                       configuration: RpcServer.Configuration) -> Outcome {
        let id = facts.requestID
        if facts.duplicate {
            return .refuse(RpcError(.alreadyExists, "request id \(id) is already in flight on this connection"), .none)
        }
        guard facts.accepting else {
            return .refuse(RpcError(.unavailable, "the server is shutting down"), .none)
        }
        guard let handler = facts.handler else {
            let shown = WireCoding.printable(Array(facts.method.utf8.prefix(128)))
            return .refuse(RpcError(.unimplemented, "unknown method \"\(shown)\""), .none)
        }
        let role: ClientRole, client: String, clientLabel: String, userID: String?
        switch facts.caller {
        case .key(nil):
            return .refuse(RpcError(.unauthenticated, "this client's key is no longer in the server's allow-list"), .none)
        case .key(let entry?):
            (role, userID) = (entry.role, entry.userID)
            client = "key " + entry.name
            clientLabel = "client \"\(entry.name)\""
        case .address(let address, let zapUserID):
            (role, userID) = (.admin, zapUserID)
            client = "address " + (address ?? "?")
            clientLabel = client
        }
        guard role >= handler.minimumRole else {
            return .refuse(RpcError(.permissionDenied,
                                    "\(facts.method) needs the \(handler.minimumRole.rawValue) role; this client is \(role.rawValue)"),
                           .denied)
        }
        if let problem = MetadataRules.problem(with: facts.metadata, maximumBytes: configuration.maximumMetadataBytes,
                                               maximumEntries: configuration.maximumMetadataEntries) {
            return .refuse(RpcError(.invalidArgument, problem), .none)
        }
        let caller = CallAdmission.Caller(connection: connection, client: client, role: role, clientLabel: clientLabel)
        if let reason = admission.refusal(for: caller) {
            return .refuse(RpcError(.resourceExhausted, reason), .rejected("\(clientLabel): \(reason)"))
        }
        var timeout = configuration.defaultTimeout
        if facts.timeoutMilliseconds != 0 {
            timeout = min(.milliseconds(Int64(facts.timeoutMilliseconds)), configuration.maximumTimeout)
        }
        return .start(Start(handler: handler, caller: caller, userID: userID, timeout: timeout))
    }
}
