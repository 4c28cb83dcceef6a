import EarshotCore
import EarshotTransport

extension NameRule {
    /// `problem` as the answer to a call: INVALID_ARGUMENT naming what is wrong. Names then go
    /// to SQLite and files byte for byte.
    static func check(_ name: String, as what: String) throws(RpcError) {
        if let problem = problem(name, as: what) { throw RpcError(.invalidArgument, problem) }
    }
}
