import EarshotWire
import FoundationEssentials
import SwiftProtobuf

/// Decoding rules shared by both ends.
enum WireCoding {
    /// `rpcSignature` as the first frame carries it.
    static let signature = Array(rpcSignature.utf8)

    /// Nesting deeper than any Earshot message needs is refused: swift-protobuf decodes
    /// recursively, and the default limit (100) lets hostile input use more stack than needed.
    static let decodingOptions: BinaryDecodingOptions = {
        var options = BinaryDecodingOptions()
        options.messageDepthLimit = 32
        return options
    }()

    /// Decodes a request payload; a failure is the client's fault (INVALID_ARGUMENT).
    static func decodeRequest<M: SwiftProtobuf.Message>(_ type: M.Type, _ payload: Data) -> Result<M, RpcError> {
        do {
            return .success(try M(serializedBytes: payload, options: decodingOptions))
        } catch {
            return .failure(RpcError(.invalidArgument, "the payload is not a valid \(M.protoMessageName) (\(error))"))
        }
    }

    /// Decodes a reply payload; a failure is the server's fault (INTERNAL, as in gRPC).
    static func decodeResponse<M: SwiftProtobuf.Message>(_ type: M.Type, _ payload: Data) -> Result<M, RpcError> {
        do {
            return .success(try M(serializedBytes: payload, options: decodingOptions))
        } catch {
            return .failure(RpcError(.internal, "the reply is not a valid \(M.protoMessageName) (\(error))"))
        }
    }

    /// A first frame for a message: at most 32 printable ASCII characters.
    static func printable(_ bytes: [UInt8]) -> String {
        let shown = bytes.prefix(32).map { (0x20..<0x7f).contains($0) ? Character(UnicodeScalar($0)) : "?" }
        return String(shown) + (bytes.count > 32 ? "…" : "")
    }

    /// "0.25 s", "10 s": how long a timeout was, for messages.
    static func seconds(_ duration: Duration) -> String {
        let (whole, attoseconds) = duration.components
        let millis = attoseconds / 1_000_000_000_000_000
        if millis == 0 { return "\(whole) s" }
        var fraction = String(millis)
        fraction = String(repeating: "0", count: 3 - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return "\(whole).\(fraction) s"
    }
}
