import CZMQ

/// What became of a send with `ZMQ_DONTWAIT`.
enum ZMQSendResult: Equatable {
    case sent
    /// EAGAIN: the peer's queue is at its high-water mark, or (with IMMEDIATE) no peer is
    /// connected yet. Nothing was queued.
    case wouldBlock
    /// EHOSTUNREACH (ROUTER_MANDATORY): no connected peer has that routing id.
    case unreachable
    case failed(TransportError)
}
