import CZMQ

/// A whole multipart message as it arrived.
struct ZMQReceivedMessage {
    var frames: [[UInt8]]
    /// The peer sent more frames than asked for, or `admit` refused one; those were read and
    /// thrown away.
    var truncated: Bool
    /// Frames the message had, kept or not.
    var frameCount = 0
    /// ZAP's user id for the connection (`zmq_msg_gets` "User-Id"); nil without security.
    var userID: String?
    /// The descriptor of the TCP connection it came on (`ZMQ_SRCFD`), -1 when unknown. Only
    /// meaningful together with the socket monitor's accept and disconnect events.
    var sourceFD: Int32 = -1
    /// The peer's IP address ("Peer-Address"), when asked for.
    var peerAddress: String?
}
