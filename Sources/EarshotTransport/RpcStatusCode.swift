/// A gRPC status code (0…16), with gRPC's meanings, carried in `Status.code` of a call's END.
public struct RpcStatusCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: Int32

    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    public static let ok = Self(rawValue: 0)
    /// Cancelled, typically by the caller (or its deadline, as the server sees it).
    public static let cancelled = Self(rawValue: 1)
    /// An error the server could not classify.
    public static let unknown = Self(rawValue: 2)
    /// The request is wrong whatever the server's state (bad payload, bad metadata).
    public static let invalidArgument = Self(rawValue: 3)
    public static let deadlineExceeded = Self(rawValue: 4)
    public static let notFound = Self(rawValue: 5)
    public static let alreadyExists = Self(rawValue: 6)
    public static let permissionDenied = Self(rawValue: 7)
    /// A limit was hit that may clear (calls in flight, a client not reading its stream).
    public static let resourceExhausted = Self(rawValue: 8)
    public static let failedPrecondition = Self(rawValue: 9)
    public static let aborted = Self(rawValue: 10)
    public static let outOfRange = Self(rawValue: 11)
    /// Unknown method or protocol version.
    public static let unimplemented = Self(rawValue: 12)
    public static let `internal` = Self(rawValue: 13)
    /// Transient: the server is shutting down or unreachable; retry with backoff.
    public static let unavailable = Self(rawValue: 14)
    public static let dataLoss = Self(rawValue: 15)
    public static let unauthenticated = Self(rawValue: 16)

    private static let names = [
        "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
        "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
        "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
    ]

    /// "DEADLINE_EXCEEDED"; "CODE_42" for a number outside 0…16.
    public var description: String {
        Self.names.indices.contains(Int(rawValue)) ? Self.names[Int(rawValue)] : "CODE_\(rawValue)"
    }
}
