import CFFmpeg

/// A failed FFmpeg call: what was being done and FFmpeg's own error text.
public struct FFmpegError: Error, Equatable, CustomStringConvertible {
    /// FFmpeg's (negative) error code; 0 where the failure is not a library call's.
    public let code: Int32
    /// What failed, in words ("opening the file", "decoding").
    public let operation: String

    public init(code: Int32, operation: String) {
        self.code = code
        self.operation = operation
    }

    /// The input is not valid for its format (`AVERROR_INVALIDDATA`).
    public var isInvalidData: Bool { code == Self.invalidData }

    /// FFmpeg's message for the code (`av_strerror`), lower-cased as in a sentence.
    public var reason: String {
        var buffer = [CChar](repeating: 0, count: 256)
        let text = av_strerror(code, &buffer, buffer.count) == 0
            ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            : "error \(code)"
        guard let first = text.first else { return "error \(code)" }
        return first.lowercased() + text.dropFirst()
    }

    /// "decoding: invalid data found when processing input"; the operation alone for a failure
    /// that is not a library call's (code 0).
    public var description: String { code == 0 ? operation : "\(operation): \(reason)" }

    /// `AVERROR_INVALIDDATA` ("Invalid data found when processing input").
    static let invalidData = earshot_averror_invaliddata()
    static let endOfFile = earshot_averror_eof()
    static let tryAgain = earshot_averror_eagain()
}
