import CZMQ

/// What a client's attempts to reach its server have shown so far, as its socket monitor saw
/// them: told apart so that a call that could not be sent says why, and a refusal ends calls at
/// once instead of at their deadline.
enum ConnectionStory: Sendable, Equatable {
    /// No TCP connection yet: nothing listens there, or the host does not answer.
    case noAnswer
    /// Connected; the handshake has not finished.
    case handshaking
    /// Connections closed during the handshake: with CURVE, the server could not decrypt this
    /// client's hello (the wrong server key); without, the server wants CURVE.
    case droppedInHandshake
    /// The server refused this client's key (not in its allow-list). libzmq does not try again.
    case keyRefused
    /// One side uses CURVE and the other does not. libzmq does not try again.
    case mechanismMismatch
    /// A handshake succeeded.
    case up

    /// The story after `event` from the monitor.
    func after(_ event: MonitorEvent) -> ConnectionStory {
        switch event.event {
        case ZMQ_EVENT_HANDSHAKE_SUCCEEDED: .up
        case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH: .keyRefused
        case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
            event.value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH ? .mechanismMismatch : .droppedInHandshake
        case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL: self == .keyRefused || self == .mechanismMismatch ? self : .droppedInHandshake
        case ZMQ_EVENT_CONNECTED: self == .noAnswer ? .handshaking : self
        default: self
        }
    }

    /// Whether libzmq has given up on the server: calls can never be sent.
    var isFinal: Bool { self == .keyRefused || self == .mechanismMismatch }

    /// Why a call to `endpoint` was never sent, in the words its user needs; `curve` says
    /// whether the client uses CURVE.
    func unsentReason(endpoint: String, curve: Bool) -> String {
        switch self {
        case .noAnswer:
            "no answer from \(endpoint) (is earshotd running there and listening on that address?)"
        case .handshaking:
            "\(endpoint) took the connection but did not finish the handshake"
        case .droppedInHandshake:
            curve
                ? "no CURVE handshake with \(endpoint): wrong server key? (it closed the connection during the handshake)"
                : "\(endpoint) closed the connection during the handshake"
        case .keyRefused:
            "\(endpoint) refused this client's key (not in its allow-list?)"
        case .mechanismMismatch:
            curve
                ? "\(endpoint) does not use CURVE but this client does (security.mode = \"none\" there?)"
                : "\(endpoint) uses CURVE, and this client has no keys"
        case .up:
            "the connection to \(endpoint) was lost before the call could be sent"
        }
    }
}
