import Foundation

/// The `ffmpeg` command-line tool, which makes the video and broadcast fixtures (CI installs it;
/// a missing one fails the test that needs it rather than skipping it).
public enum FFmpegTool {
    public static let executable = "/usr/bin/ffmpeg"

    /// ffmpeg is missing or failed; the description says which, with its messages.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Runs ffmpeg quietly, overwriting its outputs.
    public static func run(_ arguments: [String]) throws {
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw Failure(description: "ffmpeg is required at \(executable) to make the video fixtures (apt-get install ffmpeg)")
        }
        let run = try ExternalTool.run(executable, ["-hide_banner", "-loglevel", "error", "-nostdin", "-y"] + arguments)
        guard run.status == 0 else {
            throw Failure(description: "ffmpeg \(arguments.joined(separator: " ")) failed: \(run.errors)")
        }
    }

    /// A black picture of `seconds` at `rate` frames per second (MXF takes broadcast rates
    /// only), as ffmpeg input arguments: the video of a film-like fixture.
    public static func blackVideo(seconds: Int, rate: Int = 5) -> [String] {
        ["-f", "lavfi", "-i", "color=c=black:s=64x48:r=\(rate):d=\(seconds)"]
    }
}
