import FoundationEssentials

#if canImport(Glibc)
    import Glibc
#endif

/// CURVE for a server socket: its key pair and the clients it admits.
public struct ServerSecurity: Sendable {
    public var keyPair: CurveKeyPair
    public var allowList: ClientAllowList

    public init(keyPair: CurveKeyPair, allowList: ClientAllowList) {
        self.keyPair = keyPair
        self.allowList = allowList
    }

    /// Makes `socket` a CURVE server answered by the ZAP handler. Call before `bind`: the handler
    /// must be bound before the first connection can arrive. (The socket's `SocketMonitor` counts
    /// the handshakes that fail before a key is known.)
    func apply(to socket: ZMQSocket) throws(TransportError) {
        let zap = try ZAPHandler.shared()
        zap.register(allowList)
        try socket.set(.curveSecretKey, Array(keyPair.secretKey.utf8))
        try socket.set(.curveServer, true)
        try socket.set(.zapDomain, Array(allowList.domain.utf8))
        try socket.set(.zapEnforceDomain, true)
    }
}

/// CURVE for a client socket: the server's public key and the client's own pair.
public struct ClientSecurity: Sendable {
    public var serverPublicKey: String
    public var keyPair: CurveKeyPair

    public init(serverPublicKey: String, keyPair: CurveKeyPair) {
        self.serverPublicKey = serverPublicKey
        self.keyPair = keyPair
    }

    func apply(to socket: ZMQSocket) throws(TransportError) {
        guard CurveKeyPair.isValidKey(serverPublicKey) else {
            throw TransportError(operation: "use the server key", code: EINVAL,
                                 message: "a server public key is 40 characters of Z85 text")
        }
        try socket.set(.curveServerKey, Array(serverPublicKey.utf8))
        try socket.set(.curvePublicKey, Array(keyPair.publicKey.utf8))
        try socket.set(.curveSecretKey, Array(keyPair.secretKey.utf8))
    }
}
