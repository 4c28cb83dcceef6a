import CZMQ

/// A socket option with the type libzmq expects for it, so that an `Int64` option cannot be
/// given an `int` (libzmq checks the size and fails with EINVAL at run time otherwise).
struct ZMQSocketOption<Value>: Sendable {
    let name: Int32
    let label: String

    init(_ name: Int32, _ label: String) {
        self.name = name
        self.label = label
    }
}

extension ZMQSocketOption where Value == Int32 {
    /// Milliseconds unsent messages are kept after close. Earshot uses 0: a closing daemon must not
    /// hang on a client that stopped reading.
    static var linger: Self { .init(ZMQ_LINGER, "ZMQ_LINGER") }
    /// Messages queued per peer before PUB/ROUTER drop (or ROUTER_MANDATORY reports EAGAIN).
    static var sendHighWaterMark: Self { .init(ZMQ_SNDHWM, "ZMQ_SNDHWM") }
    static var receiveHighWaterMark: Self { .init(ZMQ_RCVHWM, "ZMQ_RCVHWM") }
    /// Milliseconds between ZMTP PINGs; 0 = none.
    static var heartbeatInterval: Self { .init(ZMQ_HEARTBEAT_IVL, "ZMQ_HEARTBEAT_IVL") }
    /// Milliseconds without traffic after a PING before the connection is closed.
    static var heartbeatTimeout: Self { .init(ZMQ_HEARTBEAT_TIMEOUT, "ZMQ_HEARTBEAT_TIMEOUT") }
    /// Milliseconds the remote should wait for traffic before closing (rounded to deciseconds).
    static var heartbeatTTL: Self { .init(ZMQ_HEARTBEAT_TTL, "ZMQ_HEARTBEAT_TTL") }
    /// Bytes of kernel receive buffer per connection (`SO_RCVBUF`; 0 = the system's).
    static var receiveBuffer: Self { .init(ZMQ_RCVBUF, "ZMQ_RCVBUF") }
    /// TCP keepalive on every connection: 1 on, 0 off, -1 the system's default.
    static var tcpKeepalive: Self { .init(ZMQ_TCP_KEEPALIVE, "ZMQ_TCP_KEEPALIVE") }
    /// Seconds idle before the first keepalive probe.
    static var tcpKeepaliveIdle: Self { .init(ZMQ_TCP_KEEPALIVE_IDLE, "ZMQ_TCP_KEEPALIVE_IDLE") }
    /// Seconds between keepalive probes.
    static var tcpKeepaliveInterval: Self { .init(ZMQ_TCP_KEEPALIVE_INTVL, "ZMQ_TCP_KEEPALIVE_INTVL") }
    /// Milliseconds sent data (or a keepalive probe) may stay unacknowledged before the kernel
    /// drops the connection (`TCP_USER_TIMEOUT` on Linux).
    static var tcpMaximumRetransmit: Self { .init(ZMQ_TCP_MAXRT, "ZMQ_TCP_MAXRT") }
    /// Milliseconds a new connection has to finish its handshake, security included.
    static var handshakeInterval: Self { .init(ZMQ_HANDSHAKE_IVL, "ZMQ_HANDSHAKE_IVL") }
    /// Connections the kernel completes before libzmq accepts them (the listen backlog).
    static var backlog: Self { .init(ZMQ_BACKLOG, "ZMQ_BACKLOG") }
}

extension ZMQSocketOption where Value == Int64 {
    /// Bytes; a larger inbound message makes libzmq drop it and disconnect the peer.
    static var maximumMessageSize: Self { .init(ZMQ_MAXMSGSIZE, "ZMQ_MAXMSGSIZE") }
}

extension ZMQSocketOption where Value == Bool {
    /// ROUTER: report EHOSTUNREACH for an unknown peer and EAGAIN at the high-water mark
    /// instead of dropping silently.
    static var routerMandatory: Self { .init(ZMQ_ROUTER_MANDATORY, "ZMQ_ROUTER_MANDATORY") }
    /// Queue only to completed connections, so a send before the handshake reports EAGAIN
    /// instead of filling a pipe that may never connect.
    static var immediate: Self { .init(ZMQ_IMMEDIATE, "ZMQ_IMMEDIATE") }
    /// Makes the socket the CURVE server side (it then needs `curveSecretKey`).
    static var curveServer: Self { .init(ZMQ_CURVE_SERVER, "ZMQ_CURVE_SERVER") }
    /// `ZMQ_ZAP_ENFORCE_DOMAIN`: fail the handshake when no ZAP handler answers. libzmq 4.3.4
    /// otherwise admits every CURVE key while no handler is bound. Debian's header hides it
    /// behind the DRAFT API, but the library accepts it, hence the number (re-check on upgrades).
    static var zapEnforceDomain: Self { .init(93, "ZMQ_ZAP_ENFORCE_DOMAIN") }
    /// XPUB: subscriptions are handed to the application and take effect only when it sets
    /// `subscribe`/`unsubscribe` on the XPUB itself (for the connection they came from).
    static var xpubManual: Self { .init(ZMQ_XPUB_MANUAL, "ZMQ_XPUB_MANUAL") }
}

extension ZMQSocketOption where Value == [UInt8] {
    /// SUB: a topic prefix to receive. Set before `connect`, or early messages are lost.
    /// XPUB with `xpubManual`: applies the subscription just received to its connection.
    static var subscribe: Self { .init(ZMQ_SUBSCRIBE, "ZMQ_SUBSCRIBE") }
    static var unsubscribe: Self { .init(ZMQ_UNSUBSCRIBE, "ZMQ_UNSUBSCRIBE") }
    /// The identity a DEALER presents to a ROUTER (default: the ROUTER makes one up).
    static var routingID: Self { .init(ZMQ_ROUTING_ID, "ZMQ_ROUTING_ID") }
    /// CURVE keys, as 40-character Z85 text.
    static var curvePublicKey: Self { .init(ZMQ_CURVE_PUBLICKEY, "ZMQ_CURVE_PUBLICKEY") }
    static var curveSecretKey: Self { .init(ZMQ_CURVE_SECRETKEY, "ZMQ_CURVE_SECRETKEY") }
    /// Client side: the server's public key; setting it makes the socket a CURVE client.
    static var curveServerKey: Self { .init(ZMQ_CURVE_SERVERKEY, "ZMQ_CURVE_SERVERKEY") }
    /// The ZAP domain sent to the handler, which picks the allow-list by it.
    static var zapDomain: Self { .init(ZMQ_ZAP_DOMAIN, "ZMQ_ZAP_DOMAIN") }
}
