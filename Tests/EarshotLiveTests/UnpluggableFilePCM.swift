import EarshotCore
import Foundation

@testable import EarshotAudio

/// ALSA's file PCM standing in for a USB sound card that is unplugged while it captures.
///
/// alsa-lib 1.2.8's file plugin never tells its reader that the infile went away (measured, see
/// `AlsaTestEnvironment`): an unlinked infile is read on to its end through the open descriptor,
/// a truncated one gives full periods of nothing, and even a closed descriptor only makes the
/// plugin print "Bad file descriptor" while every read still reports a full period. A device that
/// vanishes gives its reader errors instead: the kernel cuts the card's files off, and every call
/// on its PCM then fails with `-ENODEV`.
///
/// So this input captures through the real `AlsaCapture` on the file PCM and, once the infile is
/// gone, closes that PCM under the capture loop (on the loop's own thread, the only one using
/// it) and answers every call with `-ENODEV`, as a hw PCM of an unplugged card does. Reopening
/// goes through the real `AlsaCapture` again: alsa-lib refuses to open the file PCM while its
/// infile is missing, with its own error, and opens it once the file is back.
final class UnpluggableFilePCM: CaptureInput {
    let parameters: AlsaCaptureParameters
    let infile: String
    private var capture: AlsaCapture?

    init(configuration: AlsaCaptureConfiguration, requiredSampleRate: Int?, infile: String) throws(EarshotError) {
        let capture = try AlsaCapture(configuration: configuration, requiredSampleRate: requiredSampleRate)
        parameters = capture.parameters
        self.infile = infile
        self.capture = capture
    }

    /// The open PCM, or nil once the infile is gone (then the PCM is closed).
    private var pcm: AlsaCapture? {
        if capture != nil, access(infile, F_OK) != 0 { capture = nil }
        return capture
    }

    func start() -> Int32 { pcm?.start() ?? -ENODEV }
    func read(into buffer: UnsafeMutableRawPointer, frames: Int) -> Int { pcm?.read(into: buffer, frames: frames) ?? -Int(ENODEV) }
    func wait(milliseconds: Int32) -> Int32 { pcm?.wait(milliseconds: milliseconds) ?? -ENODEV }
    func recover(_ error: Int32) -> Int32 { pcm?.recover(error) ?? -ENODEV }
}
