/// How a listening socket (the RPC ROUTER, the events XPUB) finds peers that are gone: by TCP,
/// never by ZMTP heartbeats of its own.
///
/// libzmq 4.3.4 aborts the process (`Assertion failed: !_io_error`, stream_engine_base.cpp:331)
/// when its heartbeat timer fires on a connection that failed while its inbound queue was full;
/// a client that floods and vanishes leaves exactly such a connection while the daemon catches
/// up. Without a heartbeat timer that abort has no trigger of the daemon's own making, and the
/// kernel closes a connection whose peer leaves data or a keepalive probe unacknowledged for
/// `timeout`. Clients that send heartbeats with a TTL (ours do) are also closed that TTL after
/// their last traffic, by libzmq's TTL timer, which only closes.
enum PeerLiveness {
    static func apply(to socket: ZMQSocket, timeout: Duration) throws(TransportError) {
        let seconds = max(1, timeout.components.seconds)
        try socket.set(.heartbeatInterval, 0)
        try socket.set(.tcpKeepalive, 1)
        try socket.set(.tcpKeepaliveIdle, Int32(clamping: max(1, seconds / 3)))
        try socket.set(.tcpKeepaliveInterval, Int32(clamping: max(1, seconds / 6)))
        try socket.set(.tcpMaximumRetransmit, Int32(clamping: min(seconds, Int64(Int32.max) / 1000) * 1000))
    }
}
