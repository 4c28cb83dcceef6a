/// A ROUTER's routing id for one connection: the first frame of everything it receives from,
/// and sends to, that peer. libzmq makes up 5 bytes per connection unless the peer sets its own.
struct PeerID: Hashable, Sendable, CustomStringConvertible {
    let bytes: [UInt8]

    /// Lowercase hex, as `RpcCall.peer` shows it.
    var description: String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 15)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

/// A call's identity on the server: calls are keyed by connection and the client's request id.
struct CallKey: Hashable, Sendable {
    let peer: PeerID
    let requestID: UInt64
}
