import EarshotSync

/// The process's ZAP handler (ZeroMQ RFC 27): answers every CURVE handshake of every server
/// socket in the context, from the allow-list registered for the socket's ZAP domain.
///
/// One per process because its endpoint, `inproc://zeromq.zap.01`, can be bound once per
/// context; it is started before any server socket binds and lives as long as the process
/// (like the context). Sockets set `ZMQ_ZAP_ENFORCE_DOMAIN`, so should it ever stop answering,
/// handshakes fail rather than admit anyone.
final class ZAPHandler: Sendable {
    static let endpoint = "inproc://zeromq.zap.01"

    /// ZAP domain → allow-list. Static so that the handler thread needs no reference to self.
    private static let lists = Locked<[String: ClientAllowList]>([:])
    private let thread: NamedThread

    private static let started: Result<ZAPHandler, TransportError> = {
        do throws(TransportError) { return .success(try ZAPHandler()) } catch { return .failure(error) }
    }()

    /// The running handler, started (and bound) on first use.
    static func shared() throws(TransportError) -> ZAPHandler {
        try started.get()
    }

    private init() throws(TransportError) {
        let socket = try ZMQSocket(.rep)
        try socket.set(.linger, 0)
        try socket.bind(Self.endpoint)
        do {
            thread = try NamedThread(name: "earshot-zap") { Self.serve(socket) }
        } catch {
            throw TransportError(operation: "start the earshot-zap thread", code: error.code)
        }
    }

    /// Makes `list` answer for the sockets whose ZAP domain is `list.domain`. The list is kept
    /// for the life of the process (a few bytes per server ever created).
    func register(_ list: ClientAllowList) {
        Self.lists.withLock { $0[list.domain] = list }
    }

    /// Request frames: version, request id, domain, address, identity, mechanism, credentials…
    /// Reply frames: version, request id, status code, status text, user id, metadata.
    private static func serve(_ socket: ZMQSocket) {
        var poll = ZMQPollSet()
        while true {
            poll.removeAll()
            poll.add(socket)
            do { try poll.poll(timeoutMilliseconds: -1) } catch { continue }
            guard let message = try? socket.receive(maximumFrames: 8) else { continue }
            // A REP socket must answer every request before it can take the next one, so even
            // a malformed request (libzmq never sends one) gets an answer.
            let f = message.frames
            let version = f.first ?? [], requestID = f.count > 1 ? f[1] : []
            var status = "500", text = "malformed ZAP request", userID = ""
            if f.count >= 6 {
                let domain = String(decoding: f[2], as: UTF8.self)
                let address = String(decoding: f[3], as: UTF8.self)
                let mechanism = String(decoding: f[5], as: UTF8.self)
                (status, text) = ("400", "key not allowed")
                if version != Array("1.0".utf8) {
                    (status, text) = ("500", "unsupported ZAP version")
                } else if let list = lists.withLock({ $0[domain] }), mechanism == "CURVE", f.count >= 7,
                          let key = CurveKeyPair.encode(f[6]), let entry = list.admit(publicKey: key, address: address) {
                    (status, text, userID) = ("200", "OK", entry.userID)
                }
            }
            _ = socket.send([version, requestID, Array(status.utf8), Array(text.utf8), Array(userID.utf8), []])
        }
    }
}
