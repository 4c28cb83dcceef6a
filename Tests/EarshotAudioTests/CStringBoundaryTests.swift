import EarshotCore
import EarshotTestSupport
import Testing

@testable import EarshotAudio

/// Paths and device names crossing into libsndfile and alsa-lib: one with a NUL inside is
/// refused, never cut at the NUL to name something else.
struct CStringBoundaryTests {
    @Test func aFilePathWithANULIsRefused() throws {
        let paths = try PathsWithANUL()
        for existing in paths.cases.map(\.existing) {
            do {
                _ = try AudioFileReader(path: existing)
                Issue.record("AudioFileReader opened \(existing.debugDescription)")
            } catch { #expect(error.message.contains("NUL")) }
        }
    }

    @Test func aDeviceWithANULIsRefused() {
        for device in ["default\u{0}", "hw:0\u{0}x"] {
            #expect(throws: EarshotError.self) { try AlsaCaptureConfiguration(device: device).validate() }
        }
    }
}
