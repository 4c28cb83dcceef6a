import EarshotWire

/// A call that did not end OK: the status code and a message for people.
public struct RpcError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: RpcStatusCode
    public var message: String

    public init(_ code: RpcStatusCode, _ message: String) {
        self.code = code
        self.message = message
    }

    /// "DEADLINE_EXCEEDED: no answer from tcp://127.0.0.1:7400 within 2 s".
    public var description: String {
        message.isEmpty ? code.description : "\(code): \(message)"
    }

    init(_ status: Earshot_V1_Status) {
        self.init(RpcStatusCode(rawValue: status.code), status.message)
    }

    var status: Earshot_V1_Status {
        var status = Earshot_V1_Status()
        status.code = code.rawValue
        status.message = message
        return status
    }
}
