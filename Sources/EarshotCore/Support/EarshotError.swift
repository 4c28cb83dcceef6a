/// Errors of the recognition system. The cases mirror ShazamKit's `SHError` codes so that
/// clients of either feel at home; every case carries a message that says what went wrong.
public enum EarshotError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The audio's format is unsupported or the audio data is broken (SHError 100).
    case invalidAudioFormat(String)
    /// Audio given with times that leave a gap or overlap (SHError 101).
    case audioDiscontinuity(String)
    /// No signature could be made or read: silence, or a corrupt/foreign `.earsig` (SHError 200).
    case signatureInvalid(String)
    /// The signature is shorter or longer than the catalog accepts (SHError 201).
    case signatureDurationInvalid(String)
    /// A match attempt could not be carried out; this is not "no match" (SHError 202).
    case matchAttemptFailed(String)
    /// The catalog is malformed, truncated, corrupt or of a foreign format/version (SHError 300).
    case catalogInvalid(String)
    /// A library change could not be stored (SHError 400).
    case librarySyncFailed(String)
    /// Anything else: an I/O failure or a broken invariant (SHError 500).
    case internalError(String)

    /// The numeric code, as in ShazamKit's `SHError.Code`.
    public var code: Int {
        switch self {
        case .invalidAudioFormat: 100
        case .audioDiscontinuity: 101
        case .signatureInvalid: 200
        case .signatureDurationInvalid: 201
        case .matchAttemptFailed: 202
        case .catalogInvalid: 300
        case .librarySyncFailed: 400
        case .internalError: 500
        }
    }

    /// A short machine-friendly name of the case.
    public var name: String {
        switch self {
        case .invalidAudioFormat: "invalidAudioFormat"
        case .audioDiscontinuity: "audioDiscontinuity"
        case .signatureInvalid: "signatureInvalid"
        case .signatureDurationInvalid: "signatureDurationInvalid"
        case .matchAttemptFailed: "matchAttemptFailed"
        case .catalogInvalid: "catalogInvalid"
        case .librarySyncFailed: "librarySyncFailed"
        case .internalError: "internalError"
        }
    }

    /// The human-readable reason.
    public var message: String {
        switch self {
        case .invalidAudioFormat(let m), .audioDiscontinuity(let m), .signatureInvalid(let m),
            .signatureDurationInvalid(let m), .matchAttemptFailed(let m), .catalogInvalid(let m),
            .librarySyncFailed(let m), .internalError(let m):
            m
        }
    }

    public var description: String { "\(name): \(message)" }

    /// The same error with `context` (typically a file name) put in front of its message.
    public func prefixed(_ context: String) -> EarshotError {
        let m = "\(context): \(message)"
        switch self {
        case .invalidAudioFormat: return .invalidAudioFormat(m)
        case .audioDiscontinuity: return .audioDiscontinuity(m)
        case .signatureInvalid: return .signatureInvalid(m)
        case .signatureDurationInvalid: return .signatureDurationInvalid(m)
        case .matchAttemptFailed: return .matchAttemptFailed(m)
        case .catalogInvalid: return .catalogInvalid(m)
        case .librarySyncFailed: return .librarySyncFailed(m)
        case .internalError: return .internalError(m)
        }
    }
}
