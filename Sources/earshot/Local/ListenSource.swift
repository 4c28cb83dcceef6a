import EarshotAudio
import EarshotCore
import EarshotSync
import Synchronization

/// What `earshot listen` listens to: an ALSA capture device or a file played in real time.
/// Makes the session's sources and keeps the newest one, so the command can read its
/// scheduling, parameters, state and counters.
final class ListenSource: Sendable {
    enum Kind: Sendable {
        /// An ALSA PCM; `bufferDuration` and `realtimePriority` as for `AlsaAudioSource`.
        case device(AlsaCaptureConfiguration, bufferDuration: Double, realtimePriority: Int32?)
        /// An audio file played in real time (`PacedFileAudioSource`).
        case file(path: String, loop: Bool)
    }

    let kind: Kind
    private let latest = Locked<(any AudioSource)?>(nil)
    private let ended = Atomic<Bool>(false)

    /// Checks that a file can be played (before the session starts), so a bad one ends the
    /// command at once with `earshot: <file>: <problem>`.
    init(_ kind: Kind) throws(CLIFailure) {
        if case .file(let path, let loop) = kind {
            try InputFile.requireFile(path)
            do { _ = try PacedFileAudioSource(path: path, loop: loop) } catch { throw .badInput(path, error) }
        }
        self.kind = kind
    }

    /// How messages name the source: `capture device "default"`, or the file's path.
    var label: String {
        switch kind {
        case .device(let configuration, _, _): "capture device \"\(configuration.device)\""
        case .file(let path, _): path
        }
    }

    var isFile: Bool {
        if case .file = kind { return true }
        return false
    }

    /// A fresh source (the session's `SourceFactory`).
    func make() -> any AudioSource {
        let source: any AudioSource
        switch kind {
        case .device(let configuration, let bufferDuration, let realtimePriority):
            source = AlsaAudioSource(configuration: configuration, bufferDuration: bufferDuration,
                                     realtimePriority: realtimePriority)
        case .file(let path, let loop):
            // Opened fine in `init`; if it is gone or changed since, the session shows that as a
            // capture problem while the source retries, as for a device.
            source = PacedFileAudioSource(openingAtStart: path, loop: loop)
        }
        latest.withLock { $0 = source }
        return source
    }

    /// The newest source the session made, if any.
    var current: (any AudioSource)? { latest.withLock { $0 } }

    /// A played file came to its end (without --loop). Stays true once seen, also after the
    /// source is stopped.
    var fileEnded: Bool {
        guard isFile else { return false }
        if ended.load(ordering: .relaxed) { return true }
        guard current?.state == .finished else { return false }
        ended.store(true, ordering: .relaxed)
        return true
    }

    /// `problem` (a capture problem the session reports) without the device name or path the
    /// capture layer puts in front, since `label` names it.
    func reason(_ problem: String) -> String {
        let prefix = switch kind {
        case .device(let configuration, _, _): "ALSA device \"\(configuration.device)\": "
        case .file(let path, _): "\(path): "
        }
        return problem.hasPrefix(prefix) ? String(problem.dropFirst(prefix.count)) : problem
    }
}
