import EarshotCore
import EarshotTestSupport
import Testing

/// Names and text a hostile client sends: the name rule refuses control characters and overlong
/// names, and escaped text is printable and tells different texts apart.
struct NameRuleTests {
    @Test func namesFollowTheRuleAndEscapedTextIsPrintableAndFaithful() {
        let samples = HostileText.samples(2000, seed: 11)
        var seen: [[UInt8]: String] = [:]  // by bytes: String's == equates canonically equivalent text
        for s in samples {
            let hasControl = s.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }
            #expect((NameRule.problem(s, as: "name") == nil) == (!hasControl && s.utf8.count <= NameRule.maximumBytes))
            let escaped = s.escapingControlCharacters
            let escapedHasControl = escaped.unicodeScalars.contains { $0.isControlCharacter }
            #expect(!escapedHasControl, "\(s.debugDescription) → \(escaped.debugDescription)")
            // Different texts never escape alike, so a log line always tells them apart.
            if let other = seen[Array(escaped.utf8)] { #expect(Array(other.utf8) == Array(s.utf8), "\(other.debugDescription) and \(s.debugDescription)") }
            seen[Array(escaped.utf8)] = s
        }
        #expect("plain text: é 🎵".escapingControlCharacters == "plain text: é 🎵")
        #expect("a\u{0}b\nc\\".escapingControlCharacters == "a\\u{0}b\\nc\\\\")
    }
}
