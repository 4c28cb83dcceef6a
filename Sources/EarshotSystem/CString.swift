#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Text handed to C as a NUL-terminated string (a path, a device, an endpoint): C reads up to
/// the first NUL, so text with one inside would name something else, the part before it. Every
/// wrapper that passes such text refuses it first.
public enum CString {
    /// Throws EINVAL when `text` holds a NUL byte; `what` names it for the message ("path").
    public static func check(_ text: String, as what: String) throws(SystemError) {
        guard let nul = text.utf8.firstIndex(of: 0) else { return }
        let before = String(decoding: text.utf8[..<nul], as: UTF8.self)
        throw SystemError("a \(what) cannot contain a NUL byte (one follows \"\(before)\")", code: EINVAL)
    }

    public static func isSafe(_ text: String) -> Bool { !text.utf8.contains(0) }
}
