#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A system call that failed: what was being done, in words for people, and the `errno` behind it
/// (0 when the failure is not the system's, e.g. a path that is not a regular file).
public struct SystemError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    public let code: Int32

    public init(_ message: String, code: Int32) {
        self.message = message
        self.code = code
    }

    /// `what` followed by the text of `code`, e.g. "cannot write x: No space left on device".
    public static func errno(_ what: String, _ code: Int32) -> SystemError {
        SystemError("\(what): \(describeErrno(code))", code: code)
    }

    public var description: String { message }
}

/// The text of an errno value, e.g. "No such file or directory".
public func describeErrno(_ code: Int32) -> String {
    String(cString: strerror(code))
}
